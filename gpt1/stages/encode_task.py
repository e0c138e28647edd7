"""Stage `encode-task`: one task's fine-tuning examples as BPE ids (gpt1/model/task_tokens.py), the seeded
samples every fine-tuning, layer-transfer and transfer-curve job of the task reads."""

from __future__ import annotations

import logging

from gpt1 import layout
from gpt1.params.schema import Params

log = logging.getLogger(__name__)


def add_arguments(parser) -> None:
    parser.add_argument("--task", required=True, help="a task of data.tasks")


def main(args, params: Params) -> None:
    from gpt1.data.task_data import Samples, load_task_data
    from gpt1.model.task_tokens import TaskTokens
    from gpt1.tokenizer.bpe import Gpt1Bpe

    data = load_task_data(Samples.of(params), args.task, layout.TASKS)
    tokens = TaskTokens.encode(args.task, data, Gpt1Bpe.load(layout.BPE))
    tokens.save(layout.task_tokens(args.task))
    log.info("%s: %s examples encoded", args.task, {split: len(rows) for split, rows in tokens.splits.items()})
