"""Stage `baselines`: the non-neural baselines of every selected task -> results/baselines.json."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from gpt1.files.atomic import atomic_write_text
from gpt1.params.schema import Params
from gpt1.data.task_data import Samples, load_task_data
from gpt1 import layout
from gpt1.eval.baselines import task_baselines

log = logging.getLogger(__name__)


def run(params: Params, tasks_dir: Path = layout.TASKS, out: Path = layout.Results().baselines) -> dict[str, dict]:
    """The BASELINES that apply to each task that fine-tuning scores (data.tasks and the tasks scored with their models), read from data/tasks/<task>/."""
    results = {}
    for task in params.data.scored_tasks:
        data = load_task_data(Samples.of(params), task, tasks_dir)
        results[task] = task_baselines(data, params.seed)
        log.info("%s: %s", task, {name: entry["test"] for name, entry in results[task].items()})
    atomic_write_text(out, json.dumps(results, indent=2, sort_keys=True) + "\n")
    return results


def main(args, params: Params) -> None:
    run(params)
