"""Stage `evaluate`: every test metric of every fine-tuning run and baseline in one table.

Reads `results/finetune/<method>/<task>/seed<seed>/metrics.json` for every task, method and seed in
params.yaml (a task scored with another's models: inside that task's folder), `results/baselines.json`, and each
task's spec (`data/tasks/<task>/task.json`: its primary metric). Writes
- `results/scores.csv`: task, method, seed, metric, value (one row per test metric per run; a baseline's name is
  its method);
- `results/scores_summary.csv`: task, method, metric, mean, std, seeds (std: sample std, 0 for one run);
- `results/metrics.json`: the handful of numbers `dvc exp show` declares as metrics, so that it reads at a glance:
  `average` {method: Table 5's avg column, the mean over tasks of each task's primary metric, 0-1} for every
  fine-tuning method scored on all tasks, then `full` {task: full's primary metric, mean over seeds}. Every other
  number (each metric, each seed, the baselines) stays in the two tables above, which no one declares as metrics.
Baselines appear as methods `majority`, `tfidf_logreg` and `tfidf_cosine`; they are deterministic and listed with the
project seed (the one that draws the training subsample they share with fine-tuning).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pandas as pd

from gpt1.files.atomic import atomic_write_text
from gpt1.data.records import TaskSpec
from gpt1.eval.baselines import BASELINES
from gpt1.params.schema import Params
from gpt1.errors import UserError
from gpt1.layout import RESULTS, TASKS, Results, finetune_run, task_spec
from gpt1.methods import FULL
from gpt1.eval.metrics import DIGITS
from gpt1.eval.run_files import read_json, run_metrics

log = logging.getLogger(__name__)

COLUMNS = ["task", "method", "seed", "metric", "value"]


def collect_scores(params: Params, results_dir: Path) -> pd.DataFrame:
    """One row per test metric of every baseline and every (task, method, seed) run, in params order."""
    baselines_json = Results(results_dir).baselines
    baselines = read_json(baselines_json, "`gpt1 baselines`")
    rows = []
    for task in params.data.scored_tasks:
        if task not in baselines:
            raise UserError(f"{baselines_json} has no task '{task}'; re-run `gpt1 baselines`")
        for name in BASELINES:
            for metric, value in baselines[task].get(name, {}).get("test", {}).items():
                rows.append((task, name, params.seed, metric, value))
        for method in params.finetune.methods:
            for seed in params.finetune.seeds:
                metrics = run_metrics(finetune_run(task, method, seed, results_dir, params.data.model_of(task)),
                                      f"`gpt1 finetune --method {method} --task {params.data.model_of(task) or task}`")
                rows += [(task, method, seed, metric, value) for metric, value in metrics["test"].items()]
    return pd.DataFrame(rows, columns=COLUMNS)


def summarise(scores: pd.DataFrame) -> pd.DataFrame:
    """Mean and sample std over seeds per (task, method, metric), keeping the table's order."""
    grouped = scores.groupby(["task", "method", "metric"], sort=False)["value"]
    summary = grouped.agg(mean="mean", std="std", seeds="count").reset_index()
    summary["std"] = summary["std"].fillna(0.0)  # one run: no spread
    summary[["mean", "std"]] = summary[["mean", "std"]].round(DIGITS)
    return summary


def primary_rows(summary: pd.DataFrame, specs: dict[str, TaskSpec]) -> pd.DataFrame:
    """The summary's rows on each task's primary metric (TaskSpec.primary_metric), in the summary's order."""
    primary_metric = summary["task"].map({task: spec.primary_metric for task, spec in specs.items()})
    return summary[summary["metric"] == primary_metric]


def task_averages(primary: pd.DataFrame) -> dict[str, float]:
    """Per method, the mean over tasks of the `primary_rows`; only methods with a score on every task (the
    fine-tuned ones and the majority baseline), so no average is over fewer tasks than the others."""
    tasks = primary["task"].nunique()
    return {method: round(float(group["mean"].mean()), DIGITS)
            for method, group in primary.groupby("method", sort=False) if group["task"].nunique() == tasks}


# The method whose per-task scores `dvc exp show` lists (Table 5's first row, the paper's model).
HEADLINE_METHOD = FULL


def headline_metrics(summary: pd.DataFrame, specs: dict[str, TaskSpec], methods: list[str]) -> dict:
    """results/metrics.json: Table 5's average of each method in `methods`, then HEADLINE_METHOD's score per task
    (each task's primary metric); `dvc exp show` lists columns in file order."""
    primary = primary_rows(summary, specs)
    averages = task_averages(primary)
    headline: dict = {"average": {method: averages[method] for method in methods if method in averages}}
    chosen = primary[primary["method"] == HEADLINE_METHOD]
    if not chosen.empty:
        headline[HEADLINE_METHOD] = {row.task: row.mean for row in chosen.itertuples(index=False)}
    return headline


def run(params: Params, results_dir: Path, tasks_dir: Path) -> pd.DataFrame:
    """Write scores.csv, scores_summary.csv and metrics.json under `results_dir` (the tasks' specs from
    `tasks_dir`); returns the summary."""
    results_dir = Path(results_dir)
    scores = collect_scores(params, results_dir)
    summary = summarise(scores)
    files = Results(results_dir)
    atomic_write_text(files.scores, scores.to_csv(index=False, float_format="%.6f"))
    atomic_write_text(files.scores_summary, summary.to_csv(index=False))  # every digit: the tables round it once
    specs = {task: TaskSpec.from_file(task_spec(task, tasks_dir)) for task in params.data.scored_tasks}
    headline = headline_metrics(summary, specs, params.finetune.methods)
    atomic_write_text(files.evaluation_metrics, json.dumps(headline, indent=2) + "\n")
    log.info("%d scores from %d runs and baselines", len(scores), scores.groupby(["task", "method", "seed"]).ngroups)
    return summary


def main(args, params: Params) -> None:
    run(params, RESULTS, TASKS)
