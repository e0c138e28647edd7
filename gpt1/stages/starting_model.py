"""Stage `starting-model`: the record of the weights one method of finetune.methods starts from
(gpt1/train/starting_weights.py), data/starting_models/<method>.json."""

from __future__ import annotations

import logging

from gpt1 import layout
from gpt1.files.atomic import write_text_if_changed
from gpt1.params.schema import Params
from gpt1.methods import method
from gpt1.train.starting_weights import record_text

log = logging.getLogger(__name__)


def add_arguments(parser) -> None:
    parser.add_argument("--method", dest="method", required=True, help="an entry of params.yaml's `methods`")


def main(args, params: Params) -> None:
    starts_from = method(args.method, params.methods).starts_from
    path = layout.starting_model_record(args.method)
    written = write_text_if_changed(path, record_text(args.method, starts_from, layout.PRETRAIN))
    log.info("%s: %s", path, "written" if written else "unchanged")
