"""Stage `paper_tables`: the paper's Tables 2-4 beside ours (gpt1/eval/paper_tables.py), as CSV and markdown."""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd

from gpt1 import layout
from gpt1.files.atomic import atomic_path, atomic_write_text
from gpt1.params.schema import Params
from gpt1.data.records import TaskSpec
from gpt1.eval.paper_tables import comparison, markdown, without_paper_result

log = logging.getLogger(__name__)


def run_paper_tables(results_dir: Path, tasks_dir: Path, tasks: list[str], seeds: list[int]) -> pd.DataFrame:
    """Reads the finetune stage's `full` runs under `results_dir`; writes paper_tables.csv and .md beside them."""
    specs = {task: TaskSpec.from_file(layout.task_spec(task, tasks_dir)) for task in tasks}
    frame, glue = comparison(results_dir, specs, seeds)
    files = layout.Results(results_dir)
    with atomic_path(files.paper_tables) as temporary:
        frame.to_csv(temporary, index=False)  # every digit: a page rounds the value once
    atomic_write_text(files.paper_tables_markdown, markdown(frame, glue, len(seeds), without_paper_result(tasks)))
    log.info("Tables 2-4 beside the paper:\n%s", frame[["paper_task", "paper", "task", "mean", "low", "high"]]
             .to_string(index=False))
    return frame


def main(args, params: Params) -> None:
    run_paper_tables(layout.RESULTS, layout.TASKS, params.data.scored_tasks, params.finetune.seeds)
