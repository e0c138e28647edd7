"""The paper's metric per task (TaskSpec.metrics), computed with scikit-learn and scipy.

scipy.stats and sklearn.metrics are imported where a metric needs them: importing both takes 1-2 s on
two cores, paid by every one of the default's 58 fine-tuning processes, most of which need accuracy only.

Values are fractions (accuracy 0.913, not 91.3) and correlations in [-1, 1]. A metric that is undefined
for the given predictions (a correlation with constant predictions, e.g. the mean-predicting baseline)
is reported as 0.0 and explained in `Scores.notes`, so tables stay numeric and the gap stays visible.
"""

from __future__ import annotations

import math
import warnings
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


def _correlation(name: str, gold: np.ndarray, predicted: np.ndarray) -> tuple[float, str | None]:
    if np.ptp(predicted) == 0 or np.ptp(gold) == 0 or len(gold) < 2:
        which = "predictions" if np.ptp(predicted) == 0 else "gold scores"
        return 0.0, f"{name} is undefined ({which} are constant or fewer than 2 rows); reported as 0"
    from scipy import stats

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        function = stats.pearsonr if name == "pearson" else stats.spearmanr
        value = float(function(gold, predicted)[0])
    if not math.isfinite(value):
        return 0.0, f"{name} is undefined for these predictions; reported as 0"
    return value, None


def _f1(spec: TaskSpec, gold: np.ndarray, predicted: np.ndarray) -> tuple[float, str | None]:
    from sklearn.metrics import f1_score

    if len(spec.labels) == 2:
        # MRPC / QQP: F1 of the positive class, label index 1 ("paraphrase", "duplicate").
        return float(f1_score(gold, predicted, pos_label=1, average="binary", zero_division=0)), None
    return float(f1_score(gold, predicted, average="macro", zero_division=0)), "f1 is macro-averaged (not binary)"


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
        elif metric == "accuracy":
            value = float(np.mean(gold_array == predicted_array))  # sklearn's accuracy_score, without its import
        elif metric == "f1":
            value, note = _f1(spec, gold_array, predicted_array)
        elif metric == "matthews":
            from sklearn.metrics import matthews_corrcoef

            value = float(matthews_corrcoef(gold_array, predicted_array))
        else:
            raise UserError(f"task '{spec.name}': unknown metric {metric!r}")
        values[metric] = round(value, DIGITS)
        if note:
            notes.append(note)
    return Scores(values=values, notes=tuple(notes))
