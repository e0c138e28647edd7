"""Figure 2 (left) from our scores: accuracy against the number of pretrained blocks transferred, its trend and figure.

Inputs are the layer_transfer stage's runs (results/layer_transfer/<task>/layers<k>/seed<s>) and, for every block,
the finetune stage's full runs; everything is deterministic: same inputs, same bytes.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, never a window
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from gpt1.eval.figures import save_figure, test_and_dev_lines  # noqa: E402
from gpt1.eval.intervals import paired_differences, read_predictions  # noqa: E402
from gpt1.eval.run_files import run_metrics  # noqa: E402
from gpt1.layout import finetune_run, layer_transfer_run  # noqa: E402


def layer_transfer_rows(results_dir: Path, tasks: list[str], layers: list[int], seeds: list[int],
                         all_layers: int) -> pd.DataFrame:
    """One row per (task, k, seed, split); k = all_layers comes from the finetune stage's `full` run,
    which is that point exactly (finetune.reinitialise_blocks keeps every block without drawing)."""
    rows = []
    for task in tasks:
        for seed in seeds:
            points = {kept: run_metrics(layer_transfer_run(task, kept, seed, results_dir), "the layer_transfer stages")
                      for kept in layers}
            points[all_layers] = run_metrics(finetune_run(task, "full", seed, results_dir),
                                             "the finetune stage (method full)")
            rows += [{"task": task, "layers": kept, "seed": seed, "split": split,
                      "accuracy": metrics[split]["accuracy"]}
                     for kept, metrics in points.items() for split in ("dev", "test")]
    return pd.DataFrame(rows)


LAYER_TREND_COLUMNS = ["task", "split", "all_minus_none", "low", "high", "direction", "noise", "spearman_rho",
                       "spearman_p"]


def layer_transfer_trend(results_dir: Path, table: pd.DataFrame, seeds: list[int], all_layers: int) -> pd.DataFrame:
    """Per task and split: all − none (mean accuracies; NaN without k = 0) and Spearman's ρ of mean vs k; for test,
    the difference's 95 % interval (two-level bootstrap over test examples and seeds, as Table 5's) and the
    direction it gives: rises, falls or flat."""
    from scipy.stats import spearmanr  # imported where needed: scipy adds a second to every stage's start

    rows = []
    for (task, split), group in table.groupby(["task", "split"]):
        mean = group.set_index("layers")["mean"]
        none = mean.get(0, float("nan"))
        # constant accuracies (or one point) have no rank order: spearmanr returns NaN, which we write as such
        rho, p_value = spearmanr(mean.index, mean.values) if mean.nunique() > 1 else (float("nan"), float("nan"))
        interval = None
        if split == "test" and 0 in mean.index:
            interval = paired_differences({task: (
                "accuracy", read_predictions([finetune_run(task, "full", seed, results_dir) for seed in seeds]),
                read_predictions([layer_transfer_run(task, 0, seed, results_dir) for seed in seeds]))})[task]
        rows.append({"task": task, "split": split, "all_minus_none": mean[all_layers] - none,
                     # the table's units: accuracy as a fraction
                     "low": interval.low / 100 if interval else float("nan"),
                     "high": interval.high / 100 if interval else float("nan"),
                     "direction": interval.direction if interval else "", "noise": interval.noise if interval else "",
                     "spearman_rho": rho, "spearman_p": p_value})
    return pd.DataFrame(rows, columns=LAYER_TREND_COLUMNS)


def plot_layer_transfer(table: pd.DataFrame, tasks: list[str], layers: list[int], out_png: Path) -> None:
    figure, axes = plt.subplots(figsize=(5.5, 4), dpi=120)
    test_and_dev_lines(axes, table, tasks, "layers", lambda task, rows, split: f"{task} ({split})", scale=100)
    axes.set_xlabel("pretrained layers transferred")
    axes.set_ylabel("accuracy (%), mean ± std over seeds")
    axes.set_xticks(sorted(layers))
    axes.set_title("Layers transferred (cf. GPT-1 Figure 2, left)")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)
    save_figure(figure, out_png)
