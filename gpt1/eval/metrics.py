"""The paper's metrics per task (TaskSpec.metrics), implemented once for evaluation and the bootstrap.

`metric_values` computes a metric on every row of (rows, examples) arrays at once: one row is a test set as
evaluated (`score`). `drawn_metric_values` computes it on the test sets that bootstrap resamples draw
(gpt1/eval/intervals.py), from how often each resample draws each example: one matrix product of those counts with
per-example terms (correct or not, confusion indicators, the Pearson sums) instead of gathering every drawn row. F1 and the Matthews correlation
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


def _indicators(gold: np.ndarray, predicted: np.ndarray, classes: int):
    """Per example and label: whether it is the gold label, the predicted one, and both."""
    gold, predicted = gold.astype(np.int64), predicted.astype(np.int64)
    labels = np.arange(max(classes, int(gold.max()) + 1, int(predicted.max()) + 1))
    is_gold, is_predicted = gold[..., None] == labels, predicted[..., None] == labels
    return is_gold, is_predicted, is_gold & is_predicted


def _confusion_counts(gold: np.ndarray, predicted: np.ndarray, classes: int):
    """Per row and label: gold count, predicted count and correct count (float64, whole numbers)."""
    return tuple(indicator.sum(axis=-2, dtype=np.float64) for indicator in _indicators(gold, predicted, classes))


def _f1(gold: np.ndarray, predicted: np.ndarray, classes: int) -> np.ndarray:
    return _f1_of_counts(*_confusion_counts(gold, predicted, classes), classes)


def _f1_of_counts(true_sum: np.ndarray, pred_sum: np.ndarray, correct: np.ndarray, classes: int) -> np.ndarray:
    """F1 of label 1 for a two-label task (MRPC, QQP: "paraphrase", "duplicate"), else the mean F1 over the labels
    present in gold or predictions; 0 where undefined (scikit-learn's zero_division=0)."""
    denominator = true_sum + pred_sum
    with np.errstate(invalid="ignore", divide="ignore"):
        per_label = np.where(denominator > 0, 2.0 * correct / denominator, 0.0)
    if classes == 2:
        return per_label[..., 1]
    present = denominator > 0
    return per_label.sum(axis=-1) / present.sum(axis=-1)


def _matthews(gold: np.ndarray, predicted: np.ndarray, classes: int) -> np.ndarray:
    return _matthews_of_counts(*_confusion_counts(gold, predicted, classes))


def _matthews_of_counts(true_sum: np.ndarray, pred_sum: np.ndarray, correct: np.ndarray) -> np.ndarray:
    """The Matthews correlation (multi-class as scikit-learn's); 0 where undefined."""
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


def drawn_metric_values(metric: str, counts: np.ndarray, gold: np.ndarray, predicted: np.ndarray,
                        classes: int = 2) -> np.ndarray:
    """`metric` on each test set a row of `counts` (resamples, examples) draws: counts[r, i] is how often resample r
    draws example i. Accuracy, F1 and the Matthews correlation come from whole-number counts, so they equal
    `metric_values` on the drawn rows exactly; Pearson's r from the weighted sums of the centred values, equal to
    rounding. Spearman's ρ ranks each resample's rows again and has no such form: give it the rows."""
    gold, predicted = np.asarray(gold), np.asarray(predicted)
    if metric == "accuracy":
        return counts @ (predicted == gold).astype(np.float64) / counts.sum(axis=-1)
    if metric == "pearson":
        return _drawn_pearson(counts, gold.astype(float), predicted.astype(float))
    if metric in ("f1", "matthews"):
        is_gold, is_predicted, both = _indicators(gold, predicted, classes)
        sums = counts @ np.concatenate([is_gold, is_predicted, both], axis=-1).astype(np.float64)
        true_sum, pred_sum, correct = np.split(sums, 3, axis=-1)
        return _f1_of_counts(true_sum, pred_sum, correct, classes) if metric == "f1" else \
            _matthews_of_counts(true_sum, pred_sum, correct)
    raise UserError(f"no drawn-count form of metric {metric!r}: resample it from the drawn rows (metric_values)")


def _drawn_pearson(counts: np.ndarray, gold: np.ndarray, predicted: np.ndarray) -> np.ndarray:
    """Pearson's r of each drawn test set from weighted sums (centred on the whole set's means first, so the sums do
    not cancel); 0 where a drawn set is constant."""
    gold, predicted = gold - gold.mean(), predicted - predicted.mean()
    sums = counts @ np.stack([np.ones_like(gold), gold, predicted, gold * gold, predicted * predicted,
                              gold * predicted], axis=-1)
    size, gold_sum, predicted_sum, gold_squares, predicted_squares, products = np.moveaxis(sums, -1, 0)
    covariance = products - gold_sum * predicted_sum / size
    spread = np.sqrt(np.maximum(gold_squares - gold_sum ** 2 / size, 0.0) *
                     np.maximum(predicted_squares - predicted_sum ** 2 / size, 0.0))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(spread > 1e-12 * size, covariance / spread, 0.0)


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
