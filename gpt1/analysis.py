"""The paper's analysis from our scores: Table 5 (ablations) and Figure 2 left (layers transferred).

Inputs are files earlier stages wrote (results/scores.csv, results/layer_transfer/...); outputs are
tables and figures a person reads. Everything is deterministic: same inputs, same bytes.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, never a window
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from gpt1.atomic import atomic_path, atomic_write_text  # noqa: E402
from gpt1.errors import UserError  # noqa: E402
from gpt1.records import TaskSpec  # noqa: E402

log = logging.getLogger(__name__)

METHODS = {  # Table 5's rows, in the paper's order
    "full": "Transformer w/ aux LM (full)",
    "no_pretrain": "Transformer w/o pre-training",
    "no_aux_lm": "Transformer w/o aux LM",
    "lstm": "LSTM w/ aux LM",
}
PAPER_TABLE_5 = pd.DataFrame(
    [[74.7, 45.4, 91.3, 82.3, 82.0, 70.3, 81.8, 88.1, 56.0],
     [59.9, 18.9, 84.0, 79.4, 30.9, 65.5, 75.7, 71.2, 53.8],
     [75.0, 47.9, 92.0, 84.9, 83.2, 69.8, 81.1, 86.9, 54.4],
     [69.1, 30.3, 90.5, 83.2, 71.8, 68.1, 73.7, 81.1, 54.6]],
    index=list(METHODS), columns=["avg", "CoLA", "SST2", "MRPC", "STSB", "QQP", "MNLI", "QNLI", "RTE"],
)
# Data sets the paper calls "larger" when it says the auxiliary objective helps them (NLI, QQP).
LARGE_TRAIN = 10_000


def primary_metric(spec: TaskSpec) -> str:
    """The paper's headline metric for a task (first listed: accuracy, MCC, F1 or Pearson)."""
    return spec.metrics[0]


def ablation_table(scores: pd.DataFrame, specs: dict[str, TaskSpec]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Mean and std over seeds, ×100, one row per method and one column per task, plus `avg`."""
    wanted = [(task, primary_metric(spec)) for task, spec in specs.items()]
    rows = scores[scores.apply(lambda r: (r.task, r.metric) in wanted and r.variant in METHODS, axis=1)]
    if rows.empty:
        raise UserError("results/scores.csv has no fine-tuning scores for the ablation; run `gpt1 evaluate` first")
    grouped = rows.groupby(["variant", "task"])["value"]
    mean = grouped.mean().unstack("task") * 100
    std = grouped.std(ddof=1).fillna(0.0).unstack("task") * 100
    order = [m for m in METHODS if m in mean.index]
    columns = [task for task in specs if task in mean.columns]
    mean, std = mean.loc[order, columns], std.loc[order, columns]
    mean.insert(0, "avg", mean.mean(axis=1))
    std.insert(0, "avg", std.mean(axis=1))  # mean of per-task stds: a readable spread, not a combined std
    mean.index.name = std.index.name = "method"
    return mean.round(2), std.round(2)


def findings(mean: pd.DataFrame, train_sizes: dict[str, int]) -> list[str]:
    """One sentence per finding of the paper: does its direction hold in our table?"""
    def avg(method: str) -> float | None:
        return float(mean.loc[method, "avg"]) if method in mean.index else None

    def verdict(holds: bool) -> str:
        return "matches the paper" if holds else "does NOT match the paper"

    sentences = []
    full, scratch, no_aux, lstm = avg("full"), avg("no_pretrain"), avg("no_aux_lm"), avg("lstm")
    if full is not None and scratch is not None:
        sentences.append(f"Pre-training: full {full:.1f} vs w/o pre-training {scratch:.1f} on average "
                         f"({full - scratch:+.1f}; the paper: +14.8) — {verdict(full > scratch)}.")
    if full is not None and no_aux is not None:
        large = [t for t in mean.columns[1:] if train_sizes.get(t, 0) >= LARGE_TRAIN]
        small = [t for t in mean.columns[1:] if t not in large]
        gain = lambda tasks: float((mean.loc["full", tasks] - mean.loc["no_aux_lm", tasks]).mean())  # noqa: E731
        if large and small:
            holds = gain(large) > gain(small)
            sentences.append(
                f"Auxiliary LM: it changes the score by {gain(large):+.1f} on the larger data sets "
                f"({', '.join(large)}) and {gain(small):+.1f} on the smaller ones ({', '.join(small)}); the paper "
                f"found it helps the larger ones (NLI, QQP) and not the small ones — {verdict(holds)}.")
        else:
            sentences.append(f"Auxiliary LM: full {full:.1f} vs w/o aux LM {no_aux:.1f}; every task here fine-tunes "
                             f"on fewer than {LARGE_TRAIN:,} examples, so the paper's large-vs-small contrast "
                             "cannot be tested at this scale.")
    if full is not None and lstm is not None:
        sentences.append(f"Architecture: Transformer {full:.1f} vs LSTM {lstm:.1f} on average "
                         f"({full - lstm:+.1f}; the paper: +5.6) — {verdict(full > lstm)}.")
    return sentences


def _markdown(frame: pd.DataFrame, std: pd.DataFrame | None = None) -> str:
    header = "| method | " + " | ".join(frame.columns) + " |"
    lines = [header, "|" + "---|" * (len(frame.columns) + 1)]
    for method, row in frame.iterrows():
        cells = [f"{value:.1f}" + (f" ± {std.loc[method, column]:.1f}" if std is not None else "")
                 for column, value in row.items()]
        lines.append(f"| {METHODS.get(method, method)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def run_ablation(scores_csv: Path, tasks_dir: Path, tasks: list[str], finetune_caps: int | None,
                 out_csv: Path, out_std_csv: Path, out_md: Path) -> pd.DataFrame:
    if not scores_csv.exists():
        raise UserError(f"{scores_csv} not found; run `gpt1 evaluate` first")
    scores = pd.read_csv(scores_csv)
    specs = {task: TaskSpec.from_file(tasks_dir / task / "task.json") for task in tasks}
    mean, std = ablation_table(scores, specs)
    train_sizes = {}
    for task in tasks:
        with open(tasks_dir / task / "train.jsonl", encoding="utf-8") as handle:
            available = sum(1 for _ in handle)
        train_sizes[task] = min(available, finetune_caps or available)
    with atomic_path(out_csv) as temporary:
        mean.to_csv(temporary, float_format="%.2f")
    with atomic_path(out_std_csv) as temporary:
        std.to_csv(temporary, float_format="%.2f")
    metric_names = ", ".join(f"{task}: {primary_metric(spec)}" for task, spec in specs.items())
    text = [
        "# Table 5, reproduced at the embedded default's scale",
        "",
        f"Ours: test scores ×100, mean ± std over {scores[scores.variant.isin(list(METHODS))]['seed'].nunique()} "
        f"seeds ({metric_names}); "
        f"fine-tuning on at most {finetune_caps or 'all'} training examples per task.",
        "",
        _markdown(mean, std),
        "",
        "The paper (Table 5, GLUE dev/test, 117M model pretrained on BooksCorpus):",
        "",
        _markdown(PAPER_TABLE_5),
        "",
        "Our tasks stand in for the paper's: " + "; ".join(f"{task} → {spec.stands_for}" for task, spec in
                                                          specs.items()) + ".",
        "",
        "## Findings",
        "",
        *[f"- {sentence}" for sentence in findings(mean, train_sizes)],
        "",
    ]
    atomic_write_text(out_md, "\n".join(text))
    log.info("ablation table:\n%s", mean.to_string())
    return mean


# --- Figure 2 left: layers transferred ------------------------------------------------------------


def run_layer_transfer(results_dir: Path, tasks: list[str], layers: list[int], seeds: list[int], out_csv: Path,
                       out_png: Path) -> pd.DataFrame:
    """Collect results/layer_transfer/<task>/layers<k>/seed<s>/metrics.json into a table and a figure."""
    rows = []
    for task in tasks:
        for kept in layers:
            for seed in seeds:
                path = results_dir / "layer_transfer" / task / f"layers{kept}" / f"seed{seed}" / "metrics.json"
                if not path.exists():
                    raise UserError(f"{path} not found; run the layer_transfer stages first")
                metrics = json.loads(path.read_text())
                for split in ("dev", "test"):
                    rows.append({"task": task, "layers": kept, "seed": seed, "split": split,
                                 "accuracy": metrics[split]["accuracy"]})
    frame = pd.DataFrame(rows)
    table = frame.groupby(["task", "split", "layers"])["accuracy"].agg(["mean", "std"]).reset_index()
    table["std"] = table["std"].fillna(0.0)
    with atomic_path(out_csv) as temporary:
        table.to_csv(temporary, index=False, float_format="%.4f")
    _plot_layer_transfer(table, tasks, layers, out_png)
    return table


def _plot_layer_transfer(table: pd.DataFrame, tasks: list[str], layers: list[int], out_png: Path) -> None:
    figure, axes = plt.subplots(figsize=(5.5, 4), dpi=120)
    for task in tasks:
        for split, style in (("dev", "-"), ("test", "--")):
            rows = table[(table.task == task) & (table.split == split)]
            axes.errorbar(rows["layers"], rows["mean"] * 100, yerr=rows["std"] * 100, linestyle=style,
                          marker="o", capsize=2, label=f"{task} ({split})")
    axes.set_xlabel("pretrained layers transferred")
    axes.set_ylabel("accuracy (%)")
    axes.set_xticks(sorted(layers))
    axes.set_title("Layers transferred (cf. GPT-1 Figure 2, left)")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    with atomic_path(out_png) as temporary:
        figure.savefig(temporary, format="png", metadata={"Software": None})
    plt.close(figure)
