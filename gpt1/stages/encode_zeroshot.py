"""Stage `encode-zeroshot`: the selected tasks' zero-shot heuristics as candidate token ids
(gpt1/eval/zeroshot_tasks.py), written once for the `zeroshot` stage, which then scores checkpoints without the BPE."""

from __future__ import annotations

import logging
from pathlib import Path

from gpt1 import layout
from gpt1.eval.zeroshot_candidates import write_tasks
from gpt1.eval.zeroshot_tasks import load_tasks
from gpt1.params.schema import Params
from gpt1.tokenizer.bpe import Gpt1Bpe

log = logging.getLogger(__name__)


def run(params: Params, tasks_dir: Path = layout.TASKS, raw_dir: Path = layout.RAW, bpe_dir: Path = layout.BPE,
        out: Path = layout.zero_shot_tasks()) -> None:
    tasks = load_tasks(Gpt1Bpe.load(bpe_dir), tasks_dir, raw_dir, params.data.scored_tasks,
                       params.finetune.max_eval_examples, params.seed)
    write_tasks(out, tasks)
    log.info("wrote %s (%d candidate sets)", out, len(tasks))


def main(args, params: Params) -> None:
    run(params)
