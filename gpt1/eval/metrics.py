"""The paper's metrics per task (TaskSpec.metrics), implemented once for evaluation and the bootstrap.

`metric_values` computes a metric on every row of (rows, examples) arrays at once: one row is a test set as
evaluated (`score`), many rows its bootstrap resamples (gpt1/eval/intervals.py). F1 and the Matthews correlation
follow scikit-learn's formulas from confusion counts (whole numbers, so any summation order gives its values
exactly); Pearson's r centres both sides and divides by the norms; Spearman's ρ is Pearson's r of the ranks
(scipy's rankdata, imported where needed: scipy takes a second to import on two cores).

Values are fractions (accuracy 0.913, not 91.3) and correlations in [-1, 1]. A metric that is undefined
for the given predictions (a correlation with constant predictions, e.g. the mean-predicting baseline)
is reported as 0.0 and explained in `Scores.notes`, so tables stay numeric and the gap stays visible.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from gpt1.errors import UserError
from gpt1.data.records import TaskSpec

DIGITS = 6  # written values are rounded so files compare byte for byte


@dataclass(frozen=True)
class Scores:
    values: dict[str, float]
    notes: tuple[str, ...] = field(default_factory=tuple)


def _confusion_counts(gold: np.ndarray, predicted: np.ndarray, classes: int):
    """Per row and label: gold count, predicted count and correct count (float64, whole numbers)."""
    gold, predicted = gold.astype(np.int64), predicted.astype(np.int64)
    labels = np.arange(max(classes, int(gold.max()) + 1, int(predicted.max()) + 1))
    is_gold, is_predicted = gold[..., None] == labels, predicted[..., None] == labels
    as_float = lambda counts: counts.sum(axis=-2, dtype=np.float64)  # noqa: E731
    return as_float(is_gold), as_float(is_predicted), as_float(is_gold & is_predicted)


def _f1(gold: np.ndarray, predicted: np.ndarray, classes: int) -> np.ndarray:
    """F1 of label 1 for a two-label task (MRPC, QQP: "paraphrase", "duplicate"), else the mean F1 over the labels
    present in gold or predictions; 0 where undefined (scikit-learn's zero_division=0)."""
    true_sum, pred_sum, correct = _confusion_counts(gold, predicted, classes)
    denominator = true_sum + pred_sum
    with np.errstate(invalid="ignore", divide="ignore"):
        per_label = np.where(denominator > 0, 2.0 * correct / denominator, 0.0)
    if classes == 2:
        return per_label[..., 1]
    present = denominator > 0
    return per_label.sum(axis=-1) / present.sum(axis=-1)


def _matthews(gold: np.ndarray, predicted: np.ndarray, classes: int) -> np.ndarray:
    """The Matthews correlation (multi-class as scikit-learn's); 0 where undefined."""
    true_sum, pred_sum, correct = _confusion_counts(gold, predicted, classes)
    samples = pred_sum.sum(axis=-1)
    covariance = correct.sum(axis=-1) * samples - (true_sum * pred_sum).sum(axis=-1)
    spreads = (samples ** 2 - (pred_sum * pred_sum).sum(axis=-1)) * (samples ** 2 - (true_sum * true_sum).sum(axis=-1))
    return np.where(spreads == 0, 0.0, covariance / np.sqrt(np.where(spreads == 0, 1.0, spreads)))


def _pearson(gold: np.ndarray, predicted: np.ndarray) -> np.ndarray:
    """Row-wise Pearson correlation; 0 where a row is constant."""
    gold = gold - gold.mean(axis=-1, keepdims=True)
    predicted = predicted - predicted.mean(axis=-1, keepdims=True)
    spread = np.sqrt((gold ** 2).sum(axis=-1) * (predicted ** 2).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(spread > 0, (gold * predicted).sum(axis=-1) / spread, 0.0)


def metric_values(metric: str, gold: np.ndarray, predicted: np.ndarray, classes: int = 2) -> np.ndarray:
    """`metric` on each row of (rows, examples) arrays of gold labels or scores and predictions (class or candidate
    indices, or scores). `classes`: the task's label count (f1 is binary for 2). An undefined value is 0."""
    gold, predicted = np.asarray(gold), np.asarray(predicted)
    if metric == "accuracy":
        return (predicted == gold).mean(axis=-1)
    if metric == "pearson":
        return _pearson(gold.astype(float), predicted.astype(float))
    if metric == "spearman":
        from scipy.stats import rankdata

        return _pearson(rankdata(gold, axis=-1), rankdata(predicted, axis=-1))
    if metric == "f1":
        return _f1(gold, predicted, classes)
    if metric == "matthews":
        return _matthews(gold, predicted, classes)
    raise UserError(f"unknown metric {metric!r}; use one of accuracy, f1, matthews, pearson, spearman")


def _correlation(name: str, gold: np.ndarray, predicted: np.ndarray) -> tuple[float, str | None]:
    if np.ptp(predicted) == 0 or np.ptp(gold) == 0 or len(gold) < 2:
        which = "predictions" if np.ptp(predicted) == 0 else "gold scores"
        return 0.0, f"{name} is undefined ({which} are constant or fewer than 2 rows); reported as 0"
    value = float(metric_values(name, gold[None], predicted[None])[0])
    if not math.isfinite(value):
        return 0.0, f"{name} is undefined for these predictions; reported as 0"
    return value, None


def score(spec: TaskSpec, gold: Sequence[float], predicted: Sequence[float]) -> Scores:
    """Every metric of `spec.metrics` for these predictions (class/candidate indices or scores)."""
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold labels but {len(predicted)} predictions")
    if len(gold) == 0:
        raise UserError(f"task '{spec.name}': nothing to score (empty split)")
    regression = spec.is_regression
    gold_array = np.asarray(gold, dtype=np.float64 if regression else np.int64)
    predicted_array = np.asarray(predicted, dtype=np.float64 if regression else np.int64)
    values: dict[str, float] = {}
    notes: list[str] = []
    for metric in spec.metrics:
        note = None
        if metric in ("pearson", "spearman"):
            value, note = _correlation(metric, gold_array.astype(float), predicted_array.astype(float))
        elif regression:
            raise UserError(f"task '{spec.name}': metric {metric!r} needs class labels, but the task is a regression")
        elif metric in ("accuracy", "f1", "matthews"):
            value = float(metric_values(metric, gold_array[None], predicted_array[None], len(spec.labels))[0])
            if metric == "f1" and len(spec.labels) != 2:
                note = "f1 is macro-averaged (not binary)"
        else:
            raise UserError(f"task '{spec.name}': unknown metric {metric!r}")
        values[metric] = round(value, DIGITS)
        if note:
            notes.append(note)
    return Scores(values=values, notes=tuple(notes))
