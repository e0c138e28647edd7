"""The paper's Table 5 (ablations) from our scores: means, spreads, intervals, the majority class and the baselines.

Inputs are files earlier stages wrote (results/scores_summary.csv, results/finetune/..., results/baselines.json);
outputs are tables a person reads. Everything is deterministic: same inputs, same bytes.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Mapping

import pandas as pd

from gpt1.errors import UserError
from gpt1.eval.intervals import (RNG_SEED, AgainstMajority, Interval, Predictions, against_majority,
                                 paired_differences, read_predictions)
from gpt1.eval.run_files import read_json
from gpt1.data.records import TaskSpec
from gpt1.layout import finetune_run
from gpt1.methods import FULL, comparison
from gpt1.params.method_section import MethodParams
from gpt1.paper import TABLE_5, TABLE_5_COLUMNS

log = logging.getLogger(__name__)

# Table 5's methods by name (params' `methods` entries): their row labels and findings. The tables list the methods
# in the mapping's order.
Methods = Mapping[str, MethodParams]
# Table 5 as the paper prints it.
PAPER_TABLE_5 = pd.DataFrame.from_dict(TABLE_5, orient="index", columns=list(TABLE_5_COLUMNS))
# Data sets the paper calls "larger" when it says the auxiliary objective helps them (NLI, QQP).
LARGE_TRAIN = 10_000


def paper_table(methods: Methods) -> pd.DataFrame:
    """The paper's Table 5, the rows of the methods in `methods` that it has."""
    return PAPER_TABLE_5.loc[[name for name in PAPER_TABLE_5.index if name in methods]]


def ablation_table(summary: pd.DataFrame, specs: dict[str, TaskSpec],
                   methods: Methods) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Table 5 from the summary evaluate wrote (results/scores_summary.csv: mean and sample std over seeds): each
    task's primary metric ×100, one row per method of `methods` (in its order) and one column per task, plus
    `avg`."""
    wanted = {(task, spec.primary_metric) for task, spec in specs.items()}
    rows = summary[[(task, metric) in wanted and method in methods
                    for task, metric, method in zip(summary.task, summary.metric, summary.method)]]
    if rows.empty:
        raise UserError("results/scores_summary.csv has no fine-tuning scores for the ablation; run `gpt1 evaluate` "
                        "first")
    mean = rows.pivot(index="method", columns="task", values="mean") * 100
    std = rows.pivot(index="method", columns="task", values="std") * 100
    order = [m for m in methods if m in mean.index]
    columns = [task for task in specs if task in mean.columns]
    mean, std = mean.loc[order, columns], std.loc[order, columns]
    mean.insert(0, "avg", mean.mean(axis=1))
    std.insert(0, "avg", std.mean(axis=1))  # mean of per-task stds: a readable spread, not a combined std
    mean.index.name = std.index.name = "method"
    return mean, std  # unrounded: every table and page rounds once, from these


def paper_gain(method: str) -> float:
    """full − method in the paper's Table 5 average."""
    return round(PAPER_TABLE_5.loc["full", "avg"] - PAPER_TABLE_5.loc[method, "avg"], 1)


def method_intervals(results_dir: Path, specs: dict[str, TaskSpec], methods: list[str], seeds: list[int],
                     rng_seed: int = RNG_SEED) -> dict[str, dict[str, Interval]]:
    """{method: {task or "avg": full − method}} from the finetune runs' test predictions (rows and seeds drawn)."""
    def predictions(task: str, method: str) -> Predictions:
        return read_predictions([finetune_run(task, method, seed, results_dir, specs[task].model_of) for seed in seeds])

    full = {task: predictions(task, FULL) for task in specs}  # read once, compared with every method
    classes = {task: len(spec.labels) for task, spec in specs.items()}
    return {method: paired_differences({task: (spec.primary_metric, full[task], predictions(task, method))
                                        for task, spec in specs.items()}, classes=classes, rng_seed=rng_seed)
            for method in methods if method != FULL}


def majority_checks(results_dir: Path, specs: dict[str, TaskSpec], methods: list[str], seeds: list[int],
                    baselines: dict) -> dict[str, dict[str, AgainstMajority]]:
    """{method: {task: method − always the majority class}} for every task with classes or candidates (a score has
    no majority class); the majority class is the baselines' (results/baselines.json: the most frequent label of the
    training examples fine-tuning uses), the method's seeds resampled."""
    labelled = {task: spec for task, spec in specs.items() if not spec.is_regression}
    classes = {task: len(spec.labels) for task, spec in labelled.items()}
    labels = {task: majority_label(baselines, task) for task in labelled}
    return {method: against_majority({task: (spec.primary_metric, read_predictions(
                [finetune_run(task, method, seed, results_dir, spec.model_of) for seed in seeds]), labels[task])
                for task, spec in labelled.items()}, classes=classes)
            for method in methods}


def majority_label(baselines: dict, task: str) -> float:
    """The majority class the baselines stage recorded for a task (results/baselines.json)."""
    label = baselines[task].get("majority", {}).get("label")
    if label is None:
        raise UserError(f"results/baselines.json records no majority class for task '{task}'; re-run "
                        "`gpt1 baselines`")
    return label


def not_above_majority(checks: dict[str, dict[str, AgainstMajority]]) -> dict[str, set[str]]:
    """{method: the tasks where its score is not above the majority class}: Table 5's marked cells."""
    return {method: {task for task, check in by_task.items() if not check.above} for method, by_task in checks.items()}


def _with_interval(interval: Interval) -> str:
    return f"{interval.difference:+.1f} [{interval.low:+.1f}, {interval.high:+.1f}]"


def findings(mean: pd.DataFrame, intervals: dict[str, dict[str, Interval]], train_sizes: dict[str, int],
             methods: Methods) -> list[str]:
    """One sentence per method compared with full (its entry names the comparison), with its 95 % interval and a
    computed verdict, in Table 5's order."""
    return [_by_size_finding(comparison(name, methods), by_column, mean, train_sizes)
            if methods[name].finding_by_size else _average_finding(name, comparison(name, methods), by_column["avg"])
            for name, by_column in intervals.items()]


def _average_finding(name: str, compared: str, avg: Interval) -> str:
    paper = f"the paper: {paper_gain(name):+}" if name in PAPER_TABLE_5.index else "not in the paper"
    return f"{compared} = {_with_interval(avg)} on average ({paper}) — {avg.verdict} at 95 %."


def _by_size_finding(comparison: str, gains: dict[str, Interval], mean: pd.DataFrame,
                     train_sizes: dict[str, int]) -> str:
    """The paper found the method's ingredient to help the larger data sets (≥ LARGE_TRAIN training examples) and
    not the small ones: every task's interval, and whether this run's tasks can test that."""
    large = [t for t in mean.columns[1:] if train_sizes.get(t, 0) >= LARGE_TRAIN]
    per_task = "; ".join(f"{task} {_with_interval(gains[task])} ({gains[task].verdict})" for task in mean.columns[1:])
    if large and len(large) < len(mean.columns) - 1:
        return (f"{comparison} per task: {per_task}. The paper found it helps the larger data sets (here "
                f"{', '.join(large)}) and not the small ones.")
    return (f"{comparison} = {_with_interval(gains['avg'])} on average ({gains['avg'].verdict} at 95 %); per task: "
            f"{per_task}. Every task here fine-tunes on {'more' if large else 'fewer'} than {LARGE_TRAIN:,} examples, "
            "so the paper's large-vs-small contrast cannot be tested; the paper expects no gain on small sets.")


def majority_finding(checks: dict[str, dict[str, AgainstMajority]], methods: Methods) -> str | None:
    """Which scores are not above always predicting the majority class (one-sided 95 %); None without such a task."""
    if not any(checks.values()):
        return None
    marked = [f"{methods[method].label} on {', '.join(sorted(tasks))}"
              for method, tasks in not_above_majority(checks).items() if tasks]
    if not marked:
        return "Majority class: every method's score is above it on every task with classes (one-sided 95 %)."
    return ("Majority class: not above it (one-sided 95 %), so no evidence the model learnt more than the label "
            f"shares: {'; '.join(marked)}.")


INTERVAL_COLUMNS = ["comparison", "column", "difference", "low", "high", "verdict", "noise", "resamples", "low_sd",
                    "high_sd"]


def interval_frame(intervals: dict[str, dict[str, Interval]],
                   checks: dict[str, dict[str, AgainstMajority]] | None = None) -> pd.DataFrame:
    """ablation_intervals.csv: full − method per column (a two-sided 95 % interval), then method − majority class
    per task with classes (`low`: the one-sided 95 % lower bound, no `high`; verdict "above" or "not above");
    `noise`: what the interval resampled (the test examples and the seeds, or the test examples only);
    `resamples`: how many were drawn; `low_sd`, `high_sd`: each bound's Monte-Carlo standard deviation."""
    rows = [{"comparison": f"full - {method}", "column": column, "difference": interval.difference,
             "low": interval.low, "high": interval.high, "verdict": interval.verdict, "noise": interval.noise,
             "resamples": interval.resamples, "low_sd": interval.low_sd, "high_sd": interval.high_sd}
            for method, by_column in intervals.items() for column, interval in by_column.items()]
    rows += [{"comparison": f"{method} - majority class", "column": task, "difference": check.difference,
              "low": check.low, "high": float("nan"), "verdict": check.verdict, "noise": check.noise,
              "resamples": check.resamples, "low_sd": check.low_sd, "high_sd": float("nan")}
             for method, by_task in (checks or {}).items() for task, check in by_task.items()]
    return pd.DataFrame(rows, columns=INTERVAL_COLUMNS)


ONE_SEED = "‡"  # an interval over the test examples only: a side had one seed


def interval_markdown(intervals: dict[str, dict[str, Interval]], columns: list[str], methods: Methods) -> str:
    lines = ["| full − method | " + " | ".join(columns) + " |", "|" + "---|" * (len(columns) + 1)]
    for method, by_column in intervals.items():
        cells = [f"{_with_interval(by_column[c])} {by_column[c].verdict}"
                 + ("" if by_column[c].seeds_counted else f" {ONE_SEED}") for c in columns]
        lines.append(f"| {methods[method].label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


NOT_ABOVE_MAJORITY = "†"
# The one definition of the majority class, as the pages word it (gpt1/eval/baselines.py computes it).
MAJORITY_CLASS = "the most frequent label of the training examples fine-tuning uses"


def majority_markdown(checks: dict[str, dict[str, AgainstMajority]], methods: Methods) -> str:
    """method − majority class per task with classes: the difference [its one-sided 95 % lower bound], the verdict;
    a first row gives the majority class's own score on the scored rows."""
    first = next(iter(checks.values()))
    tasks = list(first)
    lines = ["| method − majority class | " + " | ".join(tasks) + " |", "|" + "---|" * (len(tasks) + 1),
             "| (majority class's score) | " + " | ".join(f"{first[t].majority:.1f}" for t in tasks) + " |"]
    for method, by_task in checks.items():
        cells = [f"{by_task[t].difference:+.1f} [≥ {by_task[t].low:+.1f}] {by_task[t].verdict}"
                 + ("" if by_task[t].above else f" {NOT_ABOVE_MAJORITY}") for t in tasks]
        lines.append(f"| {methods[method].label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


BASELINE_COLUMNS = ["task", "metric", "full", "best_baseline", "baseline", "difference"]


def read_baselines(path: Path, tasks: list[str]) -> dict:
    """results/baselines.json ({task: {baseline: {"dev", "test", "notes"}}}), checked to cover every task."""
    baselines = read_json(path, "`gpt1 baselines`")
    missing = [task for task in tasks if task not in baselines]
    if missing:
        raise UserError(f"{path} has no task {', '.join(missing)}; re-run `gpt1 baselines`")
    return baselines


def against_baselines(mean: pd.DataFrame, baselines: dict, specs: dict[str, TaskSpec]) -> pd.DataFrame:
    """Per task, full's test mean (×100) against the best of every baseline on the primary metric.
    The majority class counts too: on a skewed task it can be the one to beat."""
    if "full" not in mean.index:
        raise UserError("results/scores_summary.csv has no `full` runs to compare with the baselines; run them first")
    rows = []
    for task in mean.columns.drop("avg"):
        metric = specs[task].primary_metric
        scored = {name: entry["test"][metric] * 100 for name, entry in baselines[task].items()
                  if metric in entry.get("test", {})}
        if not scored:
            raise UserError(f"no baseline of task '{task}' has a test {metric}; re-run `gpt1 baselines`")
        best = max(scored, key=scored.get)  # a tie keeps the first in the file's (sorted) order
        full = mean.loc["full", task]
        rows.append({"task": task, "metric": metric, "full": full, "best_baseline": scored[best],
                     "baseline": best, "difference": full - scored[best]})
    return pd.DataFrame(rows, columns=BASELINE_COLUMNS)


def _ahead(difference: float) -> str:
    return "full ahead" if difference > 0 else "baseline ahead" if difference < 0 else "tie"


def baseline_finding(comparison: pd.DataFrame) -> str:
    others = comparison.task[comparison.difference <= 0].tolist()  # a tie is not a win
    sentence = (f"Baselines: full beats the best non-neural baseline on {len(comparison) - len(others)} of "
                f"{len(comparison)} tasks")
    return sentence + (f" (not on {', '.join(others)})." if others else ".")


def baseline_markdown(comparison: pd.DataFrame) -> str:
    lines = ["| task | metric | full | best baseline | baseline | full − baseline | |", "|" + "---|" * 7]
    lines += [f"| {row.task} | {row.metric} | {row.full:.1f} | {row.best_baseline:.1f} | {row.baseline} | "
              f"{row.difference:+.1f} | {_ahead(row.difference)} |" for row in comparison.itertuples()]
    return "\n".join(lines)


def markdown_table(frame: pd.DataFrame, methods: Methods, std: pd.DataFrame | None = None,
                   marked: dict[str, set[str]] | None = None) -> str:
    """Rows of methods, a cell per column: value (± std); `marked`: {method: columns} flagged NOT_ABOVE_MAJORITY."""
    header = "| method | " + " | ".join(frame.columns) + " |"
    lines = [header, "|" + "---|" * (len(frame.columns) + 1)]
    for method, row in frame.iterrows():
        cells = [f"{value:.1f}" + (f" ± {std.loc[method, column]:.1f}" if std is not None else "")
                 + (f" {NOT_ABOVE_MAJORITY}" if column in (marked or {}).get(method, ()) else "")
                 for column, value in row.items()]
        lines.append(f"| {methods[method].label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
