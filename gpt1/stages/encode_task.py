"""Stage `encode-task`: one task's fine-tuning examples as BPE ids (gpt1/model/task_encoding.py), the seeded
samples every fine-tuning, layer-transfer and transfer-curve job of the task reads, with those of the tasks scored
with its models."""

from __future__ import annotations

import logging

from gpt1 import layout
from gpt1.params.schema import Params

log = logging.getLogger(__name__)


def add_arguments(parser) -> None:
    parser.add_argument("--task", required=True, help="a task of data.tasks")


def main(args, params: Params) -> None:
    from gpt1.data.task_data import Samples, load_task_data
    from gpt1.model.task_encoding import write_task
    from gpt1.tokenizer.bpe import Gpt1Bpe

    bpe, samples = Gpt1Bpe.load(layout.BPE), Samples.of(params)
    # The tasks scored with this task's models (mnli_mm with mnli's) go inside its folder: its fine-tuning jobs,
    # which score them, depend on this folder alone.
    folders = {args.task: layout.task_tokens(args.task)}
    folders |= {other: layout.task_tokens(other, model_of=args.task) for other in params.data.scored_with(args.task)}
    for task, folder in folders.items():
        written = write_task(task, load_task_data(samples, task, layout.TASKS), bpe, folder)
        log.info("%s: %s examples encoded", task, written)
