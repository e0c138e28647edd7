"""Stage `ablation`: Table 5 (means, spreads, two-level bootstrap intervals, each method against the majority class,
findings) and full vs the non-neural baselines (gpt1/eval/analysis.py)."""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd

from gpt1.files.atomic import atomic_path, atomic_write_text
from gpt1 import layout
from gpt1.params.schema import Params
from gpt1.data.records import TaskSpec
from gpt1.data.task_data import training_rows
from gpt1.errors import UserError
from gpt1.eval.analysis import (MAJORITY_CLASS, NOT_ABOVE_MAJORITY, ONE_SEED, baseline_markdown,
                                interval_markdown, markdown_table, ablation_table, paper_table, against_baselines, baseline_finding,
                                findings, interval_frame, majority_checks, majority_finding, majority_markdown,
                                method_intervals, not_above_majority, read_baselines)
from gpt1.eval.intervals import BOUND_SD, EDGE_SDS, MAX_RESAMPLES, RESAMPLES, AgainstMajority
from gpt1.eval.analysis import Methods

log = logging.getLogger(__name__)


def stand_ins_line(specs: dict) -> str:
    """Which paper task each of ours stands in for; a user's own task (data.user_tasks) stands for none."""
    stand_ins = "; ".join(f"{task} → {spec.stands_for}" for task, spec in specs.items() if spec.stands_for)
    own = [task for task, spec in specs.items() if not spec.stands_for]
    return (f"Our tasks stand in for the paper's: {stand_ins or 'none'}" +
            (f"; your own tasks: {', '.join(own)}." if own else "."))


def majority_lines(checks: dict[str, dict[str, AgainstMajority]], methods: Methods) -> tuple[list[str], list[str]]:
    """ablation.md's lines on the majority class: Table 5's footnote and, under the intervals, each method's
    difference with its one-sided bound; none without a task with classes."""
    if not any(checks.values()):
        return [], []
    footnote = [f"{NOT_ABOVE_MAJORITY} not above the majority class (one-sided 95 %): no evidence the method learnt "
                f"more than always predicting {MAJORITY_CLASS} (the comparison is under the intervals below).", ""]
    table = [f"Each method − always predicting {MAJORITY_CLASS} (×100, the task's metric, on the test rows): the "
             "difference on those rows [its one-sided 95 % lower bound over two-level resamples of the test "
             f"examples and the method's seeds]. \"above\": the bound is above 0; \"not above\" "
             f"({NOT_ABOVE_MAJORITY} in Table 5): it is not; \"at the edge\" ({NOT_ABOVE_MAJORITY} too): it lies "
             "within two of its Monte-Carlo deviations of 0.",
             "", majority_markdown(checks, methods), ""]
    return footnote, table


def one_seed_lines(intervals: dict) -> list[str]:
    """A footnote for the intervals that could not count the seeds (a method ran one seed)."""
    if all(interval.seeds_counted for by_column in intervals.values() for interval in by_column.values()):
        return []
    return [f"{ONE_SEED} a method ran one seed: this interval covers the test examples only, not the spread between "
            "seeds; run more seeds (finetune.seeds) before reading its verdict.", ""]


def ablation_markdown(mean: pd.DataFrame, std: pd.DataFrame, intervals: dict, comparison: pd.DataFrame,
                      specs: dict[str, TaskSpec], seeds_run: int, finetune_caps: int | None,
                      train_sizes: dict[str, int], checks: dict[str, dict[str, AgainstMajority]],
                      methods: Methods) -> str:
    """results/ablation.md: Table 5 (ours beside the paper's; a score not above the majority class marked), the
    differences' intervals and each method against the majority class, the baselines and the findings."""
    metric_names = ", ".join(f"{task}: {spec.primary_metric}" for task, spec in specs.items())
    footnote, majority_table = majority_lines(checks, methods)
    finding = majority_finding(checks, methods)
    return "\n".join([
        "# Table 5, reproduced at this profile's scale",
        "",
        f"Ours: test scores ×100, mean ± std over {seeds_run} seeds ({metric_names}); "
        f"fine-tuning on at most {finetune_caps or 'all'} training examples per task.",
        "",
        markdown_table(mean, methods, std, not_above_majority(checks)),
        "",
        *footnote,
        "The paper (Table 5, GLUE dev/test, 117M model pretrained on BooksCorpus):",
        "",
        markdown_table(paper_table(methods), methods),
        "",
        stand_ins_line(specs),
        "",
        "## Differences with their 95 % intervals",
        "",
        "full − method, ×100: the difference on the whole test set [2.5th, 97.5th percentile over two-level "
        "bootstrap resamples: the test examples drawn with replacement, the same for both methods, then each "
        "method's seeds drawn with replacement, its score the mean over the drawn seeds]; the average resamples "
        "every task. \"supported\": the interval lies above 0; \"reversed\": below 0. Each interval draws at least "
        f"{RESAMPLES:,} resamples and more until each bound's Monte-Carlo standard deviation (how far it moves with "
        f"another draw of the bootstrap) is at most {BOUND_SD} points, up to {MAX_RESAMPLES:,} (the counts and "
        "deviations are in ablation_intervals.csv); \"at the edge\": a bound lies within "
        f"{EDGE_SDS:g} of its deviations of 0, so another draw could move it across.",
        "",
        interval_markdown(intervals, list(mean.columns), methods),
        "",
        *one_seed_lines(intervals),
        *majority_table,
        "## Against the non-neural baselines",
        "",
        "full's test score ×100 (mean over seeds, as above) against the best on the same metric of every baseline "
        f"`gpt1 baselines` ran (the majority class: always {MAJORITY_CLASS}; TF-IDF + logistic regression; TF-IDF "
        "cosine; deterministic, one run).",
        "",
        baseline_markdown(comparison),
        "",
        "## Findings",
        "",
        *[f"- {sentence}" for sentence in [*findings(mean, intervals, train_sizes, methods), baseline_finding(comparison),
                                            *([finding] if finding else [])]],
        "",
    ])


def run_ablation(results_dir: Path, tasks_dir: Path, tasks: list[str], seeds: list[int],
                 finetune_caps: int | None, methods: Methods) -> pd.DataFrame:
    """Reads scores_summary.csv (evaluate's means and spreads over seeds), baselines.json and the finetune runs'
    test predictions under `results_dir`; writes ablation.csv (means), ablation_std.csv, ablation_intervals.csv,
    ablation_baselines.csv and ablation.md beside them. `methods`: Table 5's methods in its order, by name."""
    files = layout.Results(results_dir)
    summary_csv, baselines_json, out_md = files.scores_summary, files.baselines, files.ablation_markdown
    out_csv, out_std_csv, out_intervals_csv, out_baselines_csv = (
        files.ablation, files.ablation_std, files.ablation_intervals, files.ablation_baselines)
    if not summary_csv.exists():
        raise UserError(f"{summary_csv} not found; run `gpt1 evaluate` first")
    baselines = read_baselines(baselines_json, tasks)
    summary = pd.read_csv(summary_csv)
    specs = {task: TaskSpec.from_file(layout.task_spec(task, tasks_dir)) for task in tasks}
    mean, std = ablation_table(summary, specs, methods)
    train_sizes = {task: training_rows(task, tasks_dir, finetune_caps) for task in tasks}
    # every digit: a page or table that rounds these rounds the value itself, never a rounding of it
    with atomic_path(out_csv) as temporary:
        mean.to_csv(temporary)
    with atomic_path(out_std_csv) as temporary:
        std.to_csv(temporary)
    intervals = method_intervals(results_dir, specs, list(mean.index), seeds)
    checks = majority_checks(results_dir, specs, list(mean.index), seeds, baselines)
    with atomic_path(out_intervals_csv) as temporary:
        interval_frame(intervals, checks).to_csv(temporary, index=False)
    comparison = against_baselines(mean, baselines, specs)
    with atomic_path(out_baselines_csv) as temporary:
        comparison.to_csv(temporary, index=False)
    seeds_run = summary[summary.method.isin(list(methods))]["seeds"].max()
    atomic_write_text(out_md, ablation_markdown(mean, std, intervals, comparison, specs, seeds_run, finetune_caps,
                                                train_sizes, checks, methods))
    log.info("ablation table:\n%s", mean.to_string())
    return mean


def main(args, params: Params) -> None:
    run_ablation(layout.RESULTS, layout.TASKS, params.data.scored_tasks, params.finetune.seeds,
                 params.finetune.max_train_examples, {name: params.methods[name] for name in params.finetune.methods})
