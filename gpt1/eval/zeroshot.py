"""Zero-shot scores: the paper's heuristics over the pretraining checkpoints, their trends and figure (Figure 2,
right; for the `zeroshot` stage).

Every log-spaced checkpoint of the Transformer and of the LSTM (plus the final model) is scored on the test
split WITHOUT fine-tuning, with the heuristics of the selected tasks (gpt1/eval/zeroshot_tasks.py says which
and how; gpt1/eval/zeroshot_scoring.py scores them). A tie counts as wrong, so an untrained model that scores
every candidate alike gets 0, never a lucky 1.

The figure plots RAW test accuracy, one panel per heuristic, with its chance level dashed and a 95 %
binomial band, because a reader can judge "above chance, and by more than the noise" at a glance. The paper
normalised between chance and the state of the art; we first normalised by our best fine-tuned score, but at
our scale that score is barely above chance, so the ratio swung past 1 and below -0.9 and meant nothing.
Whether a heuristic rises over pretraining is decided, not eyeballed: results/zero_shot_trend.csv compares
the last checkpoint with the first (a z-test on the two binomial accuracies, treated as independent, which is
conservative for the same test rows) and gives the direction: rises, falls, or flat when the difference is within
1.96 standard errors; Spearman's rho with the step says how steadily it got there. Each model is one pretraining
run, so the test examples are the only noise counted.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from scipy.stats import spearmanr
from tqdm import tqdm

from gpt1.files.atomic import atomic_write_text
from gpt1.errors import UserError
from gpt1.layout import kept_checkpoints, pretrained_model, pretraining_checkpoints, pretraining_run
from gpt1.kinds import DISPLAY_NAMES, KINDS, TRANSFORMER
from gpt1.model.lm import load_model
from gpt1.eval.figures import save_figure
from gpt1.eval.zeroshot_scoring import evaluate_many
from gpt1.eval.zeroshot_candidates import ZeroShotTask

log = logging.getLogger(__name__)

PRETRAINED_KINDS = KINDS
COLUMNS = ["model", "step", "task", "examples", "score", "chance", "se"]
TREND_COLUMNS = ["model", "task", "first_step", "last_step", "first", "last", "difference", "se", "z", "spearman",
                 "direction", "noise"]
Z_95 = 1.96
NOISE = "test examples only (one pretraining run)"
PANEL_INCHES = (3.0, 3.2)  # (width, height) of one heuristic's panel
DPI = 100


# --- checkpoints -----------------------------------------------------------------------------------------


def find_checkpoints(pretrain_dir: Path, kind: str, final_step: int) -> list[tuple[int, Path]]:
    """(step, path) ascending: every checkpoints/step_<N>.safetensors, and model.safetensors as `final_step`
    unless a checkpoint at or past that step already stands for it."""
    folder = pretraining_run(kind, pretrain_dir)
    found = kept_checkpoints(pretraining_checkpoints(kind, pretrain_dir))
    final = pretrained_model(kind, pretrain_dir)
    if final.is_file() and max(found, default=-1) < final_step:
        found[final_step] = final
    if not found:
        raise UserError(f"no {kind} checkpoints in {folder} (checkpoints/step_<N>.safetensors or model.safetensors); "
                        "run `gpt1 pretrain` first")
    return sorted(found.items())


# --- the stage ---------------------------------------------------------------------------------------


def standard_error(accuracy: float | np.ndarray, examples: int | np.ndarray):
    """The binomial standard error of an accuracy over `examples` independent examples."""
    return np.sqrt(accuracy * (1 - accuracy) / examples)


def evaluate_checkpoints(tasks: list[ZeroShotTask], checkpoints: dict[str, list[tuple[int, Path]]],
                         max_positions: int, device: torch.device, batch_size: int = 64) -> pd.DataFrame:
    rows = []
    jobs = [(kind, step, path) for kind, found in checkpoints.items() for step, path in found]
    for kind, step, path in tqdm(jobs, desc="zero-shot", unit="checkpoint", disable=None):
        model = load_model(path, device)
        # The LSTM has no position limit; cut its inputs as the Transformer's, so both see the same text.
        limit = min(max_positions, getattr(model.config, "n_positions", max_positions))
        for task, score in zip(tasks, evaluate_many(model, tasks, limit, batch_size, device)):
            rows.append({"model": kind, "step": step, "task": task.name, "examples": len(task.labels),
                         "score": score, "chance": task.chance})
            log.info("%s step %d %s: %.4f", kind, step, task.name, score)
    table = pd.DataFrame(rows)
    table["se"] = standard_error(table["score"], table["examples"])
    return table[COLUMNS]


def trend_row(rows: pd.DataFrame) -> dict:
    """Does one (model, heuristic) rise or fall over pretraining? Last minus first checkpoint beyond 1.96 standard
    errors (their binomial errors, independent) either way; Spearman's rho over all checkpoints beside it."""
    rows = rows.sort_values("step")
    first, last = rows.iloc[0], rows.iloc[-1]
    difference = float(last["score"] - first["score"])
    se = math.hypot(first["se"], last["se"])
    z = difference / se if se > 0 else (math.copysign(math.inf, difference) if difference else 0.0)
    # Undefined (NaN) for one checkpoint or a flat curve.
    spearman = float(spearmanr(rows["step"], rows["score"])[0]) if rows["score"].nunique() > 1 else math.nan
    return {"first_step": int(first["step"]), "last_step": int(last["step"]), "first": float(first["score"]),
            "last": float(last["score"]), "difference": difference, "se": se, "z": z, "spearman": spearman,
            "direction": direction(z), "noise": NOISE}


def direction(z: float) -> str:
    """rises / falls beyond 1.96 standard errors, flat within them."""
    return "rises" if z > Z_95 else "falls" if z < -Z_95 else "flat"


def trend(table: pd.DataFrame) -> pd.DataFrame:
    """One row per (model, heuristic) of the score table: see trend_row."""
    rows = [{"model": model, "task": task, **trend_row(group)}
            for (model, task), group in table.groupby(["model", "task"], sort=False)]
    result = pd.DataFrame(rows, columns=TREND_COLUMNS)
    for row in result.itertuples():
        log.info("%s %s: %.4f (step %d) -> %.4f (step %d), %+.4f +- %.4f, z %.2f, Spearman %.2f: %s",
                 row.model, row.task, row.first, row.first_step, row.last, row.last_step, row.difference, row.se,
                 row.z, row.spearman, row.direction)
    return result


def write_csv(table: pd.DataFrame, path: Path) -> None:
    atomic_write_text(path, table.to_csv(index=False, lineterminator="\n"))  # every digit: a page rounds once


def plot(table: pd.DataFrame, tasks: list[ZeroShotTask], out_png: Path) -> None:
    """Figure 2 (right): raw accuracy vs pretraining updates, one panel per heuristic, Transformer solid and
    LSTM dashed, each with its 95 % binomial band, chance as a grey dashed line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    width, height = PANEL_INCHES
    figure, axes = plt.subplots(1, len(tasks), figsize=(width * len(tasks), height), dpi=DPI, squeeze=False)
    colours = dict(zip(PRETRAINED_KINDS, plt.rcParams["axes.prop_cycle"].by_key()["color"]))
    shown = table[table["step"] > 0]  # a log axis has no room for step 0
    for axis, task in zip(axes[0], tasks):
        for kind, rows in shown[shown["task"] == task.name].groupby("model", sort=False):
            rows = rows.sort_values("step")
            low, high = (rows["score"] - Z_95 * rows["se"]).clip(0, 1), (rows["score"] + Z_95 * rows["se"]).clip(0, 1)
            colour = colours.get(kind)
            axis.fill_between(rows["step"], 100 * low, 100 * high, color=colour, alpha=0.15, linewidth=0)
            axis.plot(rows["step"], 100 * rows["score"], color=colour, marker="o", markersize=3,
                      linestyle="-" if kind == TRANSFORMER else "--", label=DISPLAY_NAMES.get(kind, kind))
        axis.axhline(100 * task.chance, color="grey", linestyle="--", linewidth=0.8, label="chance")
        axis.set_xscale("log")
        axis.set_title(f"{task.name}\n({task.stands_for})", fontsize=9)
        axis.set_xlabel("pretraining updates")
    axes[0, 0].set_ylabel("zero-shot test accuracy (%)")
    axes[0, 0].legend(fontsize=7)
    save_figure(figure, out_png)
