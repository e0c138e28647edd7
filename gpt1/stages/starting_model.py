"""Stage `starting-model`: the record of the weights one method of finetune.variants starts from
(gpt1/train/starting_weights.py), data/starting_models/<variant>.json."""

from __future__ import annotations

import logging

from gpt1 import layout
from gpt1.atomic import atomic_write_text
from gpt1.config import Params
from gpt1.methods import METHODS
from gpt1.train.starting_weights import record_text

log = logging.getLogger(__name__)


def add_arguments(parser) -> None:
    parser.add_argument("--variant", choices=list(METHODS), required=True, help="a method of gpt1/methods.py")


def main(args, params: Params) -> None:
    path = layout.starting_model_record(args.variant)
    text = record_text(args.variant, layout.PRETRAIN)
    if path.is_file() and path.read_text() == text:
        log.info("%s: unchanged", path)
        return  # kept as it is, time stamp included: Snakemake compares times
    atomic_write_text(path, text)
    log.info("%s: written", path)
