"""Transfer over pretraining: `full`'s fine-tuned score against the pretraining updates of its starting model.

The curve's points, per task and seed: 0 updates is the finetune stage's no_pretrain run (random weights, at the
learning rate chosen on dev for them, so the zero point is no pretraining at its best; absent when
finetune.methods leaves no_pretrain out); the last update is its full run; in between, the transfer_curve
stage's runs from the kept pretraining checkpoints. Scores are the
task's headline metric ×100, mean ± std over seeds. The trend per task and split: last − first, with a 95 %
interval from the two-level bootstrap over test examples and seeds that Table 5 uses (gpt1/eval/intervals.py) and
the direction it gives (rises, falls or flat), and Spearman's ρ of the mean score with the updates.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from gpt1.data.records import TaskSpec  # noqa: E402
from gpt1.eval.figures import save_figure, test_and_dev_lines  # noqa: E402
from gpt1.eval.intervals import paired_differences, read_predictions  # noqa: E402
from gpt1.eval.run_files import run_metrics  # noqa: E402
from gpt1.layout import finetune_run, transfer_curve_run  # noqa: E402
from gpt1.methods import FULL, NO_PRETRAIN  # noqa: E402

SPLITS = ("dev", "test")
TABLE_COLUMNS = ["task", "metric", "split", "updates", "tokens", "mean", "std", "seeds"]
TREND_COLUMNS = ["task", "metric", "split", "first_updates", "last_updates", "last_minus_first", "low", "high",
                 "direction", "noise", "spearman_rho", "spearman_p"]


def point_runs(results_dir: Path, task: str, steps: list[int], final_step: int, seeds: list[int],
               with_zero: bool) -> dict[int, list[Path]]:
    """The run folders of each point of one task's curve, by pretraining updates, in ascending order; 0 (the
    no_pretrain runs) only `with_zero`."""
    points = {0: [finetune_run(task, NO_PRETRAIN, seed, results_dir) for seed in seeds]} if with_zero else {}
    points.update({step: [transfer_curve_run(task, step, seed, results_dir) for seed in seeds] for step in sorted(steps)})
    points[final_step] = [finetune_run(task, FULL, seed, results_dir) for seed in seeds]
    return points


def curve_table(results_dir: Path, specs: dict[str, TaskSpec], steps: list[int], final_step: int,
                seeds: list[int], tokens_per_update: int, with_zero: bool) -> pd.DataFrame:
    """One row per (task, split, point): updates, tokens, and the score's mean and std over seeds, ×100."""
    rows = []
    for task, spec in specs.items():
        metric = spec.primary_metric
        for updates, folders in point_runs(results_dir, task, steps, final_step, seeds, with_zero).items():
            writer = (f"the finetune stage (methods {FULL} and {NO_PRETRAIN})" if updates in (0, final_step)
                      else "the transfer_curve stage")
            runs = [run_metrics(folder, writer) for folder in folders]
            for split in SPLITS:
                scores = pd.Series([100 * run[split][metric] for run in runs])
                rows.append({"task": task, "metric": metric, "split": split, "updates": updates,
                             "tokens": updates * tokens_per_update, "mean": scores.mean(),
                             "std": scores.std(ddof=1) if len(scores) > 1 else 0.0, "seeds": len(scores)})
    return pd.DataFrame(rows, columns=TABLE_COLUMNS)


def curve_trend(results_dir: Path, table: pd.DataFrame, steps: list[int], final_step: int,
                seeds: list[int], with_zero: bool) -> pd.DataFrame:
    """Per task and split: last − first point (×100) and Spearman's ρ of the mean score with the updates; for
    test, the difference's 95 % interval (two-level bootstrap over test examples and seeds) and direction."""
    from scipy.stats import spearmanr  # imported where needed: scipy adds a second to every stage's start

    rows = []
    for task, group in table.groupby("task", sort=False):
        metric = group["metric"].iloc[0]
        points = point_runs(results_dir, task, steps, final_step, seeds, with_zero)
        first = min(points)
        interval = paired_differences({task: (metric, read_predictions(points[final_step]),
                                              read_predictions(points[first]))})[task]
        for split in SPLITS:
            curve = group[group.split == split].set_index("updates")["mean"]
            # constant scores have no rank order: spearmanr returns NaN, which we write as such
            rho, p_value = spearmanr(curve.index, curve.values) if curve.nunique() > 1 else (float("nan"),) * 2
            test = split == "test"
            rows.append({"task": task, "metric": metric, "split": split, "first_updates": first,
                         "last_updates": final_step, "last_minus_first": curve[final_step] - curve[first],
                         "low": interval.low if test else float("nan"), "high": interval.high if test else float("nan"),
                         "direction": interval.direction if test else "", "noise": interval.noise if test else "",
                         "spearman_rho": rho, "spearman_p": p_value})
    return pd.DataFrame(rows, columns=TREND_COLUMNS)


def plot_curve(table: pd.DataFrame, out_png: Path) -> None:
    figure, axes = plt.subplots(figsize=(5.5, 4), dpi=120)
    test_and_dev_lines(axes, table, list(table["task"].unique()), "updates",
                       lambda task, rows, split: f"{task}, {rows['metric'].iloc[0]} ({split})")
    updates = sorted(table["updates"].unique())
    axes.set_xscale("symlog", linthresh=max(1, min((u for u in updates if u > 0), default=1)))
    axes.set_xticks(updates)
    axes.set_xticklabels([f"{u:,}" for u in updates], fontsize=8)
    per_update = int(table["tokens"].max() // max(1, table["updates"].max()))
    axes.set_xlabel(f"pretraining updates (×{per_update:,} tokens; 0: {NO_PRETRAIN})")
    axes.set_ylabel("score ×100, mean ± std over seeds")
    axes.set_title("Transfer over pretraining (full, fine-tuned)")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=7)
    save_figure(figure, out_png)


def pretraining_gap(table: pd.DataFrame, split: str = "test") -> pd.DataFrame:
    """Table 5's first finding against pretraining: per point of the curve past 0 updates, the mean over tasks of
    (full fine-tuned from that point − no_pretrain), ×100. Needs the 0 point (no_pretrain) of every task."""
    rows = table[table.split == split]
    means = rows.pivot_table(index="updates", columns="task", values="mean")
    if 0 not in means.index:
        raise ValueError("the curve has no 0-updates point (no_pretrain): the gap needs it")
    gap = means.sub(means.loc[0], axis=1).mean(axis=1).drop(index=0)
    tokens = rows.groupby("updates")["tokens"].first()
    return pd.DataFrame({"updates": gap.index, "tokens": tokens[gap.index].to_numpy(), "gap": gap.to_numpy()})


def tokens_for_gap(gap: pd.DataFrame, target: float) -> float | None:
    """The pretraining tokens at which a straight line through the gap against log10(tokens) (least squares) reaches
    `target`; None when the line does not rise or has fewer than two points to be drawn through."""
    import numpy as np

    if len(gap) < 2:
        return None
    slope, intercept = np.polyfit(np.log10(gap["tokens"].astype(float)), gap["gap"].astype(float), 1)
    if slope <= 0:
        return None
    return float(10 ** ((target - intercept) / slope))
