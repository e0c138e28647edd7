"""Paired bootstrap intervals for differences between fine-tuning methods, seeds pooled.

A method's score on a resample of the test set is its metric on those rows, averaged over its seeds; two
methods are compared on the *same* resampled rows (paired), so what varies is only which test examples
were drawn. The average over tasks resamples each task's test set independently and averages the per-task
differences. A difference is called "supported" when its 95 % interval lies above 0, "reversed" when it
lies below 0, and "not supported" otherwise.

A method is also set against always predicting the majority class of the rows it was scored on (the same paired
resamples): its score is "above" the majority class when the one-sided 95 % lower bound of method − majority
class is above 0, and "not above" otherwise — what a model that learnt nothing but the label shares scores.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gpt1.errors import UserError
from gpt1.eval.metrics import metric_values
from gpt1.layout import run_predictions

RESAMPLES = 2000
LEVEL = 0.95
RNG_SEED = 0  # fixed: the same predictions give the same interval, byte for byte


@dataclass(frozen=True)
class Predictions:
    """One method's test predictions on one task: gold labels and one row of predictions per seed."""

    labels: np.ndarray  # (examples,)
    by_seed: np.ndarray  # (seeds, examples): class/candidate indices or scores


@dataclass(frozen=True)
class Interval:
    difference: float  # on the full test set, ×100
    low: float
    high: float

    @property
    def verdict(self) -> str:
        if self.low > 0:
            return "supported"
        if self.high < 0:
            return "reversed"
        return "not supported"


def read_predictions(run_dirs: list[Path]) -> Predictions:
    """predictions_test.jsonl of each seed's run folder; every seed must have scored the same rows."""
    labels, rows = None, []
    for folder in run_dirs:
        path = Path(folder) / run_predictions("test")
        if not path.is_file():
            raise UserError(f"{path} not found; run the fine-tuning stages first")
        records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        seed_labels = np.array([record["label"] for record in records], dtype=float)
        if labels is not None and not np.array_equal(labels, seed_labels):
            raise UserError(f"{path}: its test rows differ from the other seeds'; re-run the fine-tuning stages")
        labels = seed_labels
        rows.append([record["prediction"] for record in records])
    if labels is None:
        raise UserError("no fine-tuning runs to compare")
    return Predictions(labels=labels, by_seed=np.asarray(rows, dtype=float))


def resampled_scores(metric: str, predictions: Predictions, rows: np.ndarray, classes: int = 2) -> np.ndarray:
    """The metric on each resample (`rows`: resamples × examples indices), averaged over seeds; evaluation's own
    implementation (gpt1/eval/metrics.py), vectorised over the resamples. `classes`: the task's label count (f1)."""
    gold = predictions.labels[rows]
    return np.mean([metric_values(metric, gold, predicted[rows], classes) for predicted in predictions.by_seed], axis=0)


def draw_rows(examples: int, rng: np.random.Generator, resamples: int = RESAMPLES) -> np.ndarray:
    """Row indices of `resamples` bootstrap samples of a test set, the full set as row 0."""
    rows = rng.integers(0, examples, size=(resamples + 1, examples))
    rows[0] = np.arange(examples)
    return rows


def paired_differences(tasks: dict[str, tuple[str, Predictions, Predictions]],
                       resamples: int = RESAMPLES, classes: dict[str, int] | None = None) -> dict[str, Interval]:
    """Interval of method A − method B per task and for their average, ×100.

    `tasks`: {task: (metric, A's predictions, B's predictions)}; the same rows are drawn for A and B. `classes`:
    {task: its label count} where a metric needs it (f1 is binary for 2, the default)."""
    differences = _resampled_differences(tasks, resamples, classes)
    if differences:
        differences["avg"] = np.mean(list(differences.values()), axis=0)
    return {name: Interval(float(values[0]), *percentile_interval(values)) for name, values in differences.items()}


def _resampled_differences(tasks: dict[str, tuple[str, Predictions, Predictions]], resamples: int,
                           classes: dict[str, int] | None) -> dict[str, np.ndarray]:
    """Per task, A − B ×100 on the whole test set (row 0) and on each paired resample, drawn task after task."""
    rng = np.random.default_rng(RNG_SEED)
    differences = {}
    for task, (metric, first, second) in tasks.items():
        if not np.array_equal(first.labels, second.labels):
            raise UserError(f"task '{task}': the two methods were scored on different test rows")
        rows = draw_rows(len(first.labels), rng, resamples)
        count = (classes or {}).get(task, 2)
        differences[task] = 100 * (resampled_scores(metric, first, rows, count) -
                                   resampled_scores(metric, second, rows, count))
    return differences


@dataclass(frozen=True)
class AgainstMajority:
    """A method's score on one task against always predicting the majority class of the rows it was scored on."""

    majority: float  # the majority class's score on those rows, ×100 (for accuracy: the largest class's share)
    difference: float  # method − majority class on those rows, ×100
    low: float  # the one-sided LEVEL lower bound of the difference

    @property
    def above(self) -> bool:
        return self.low > 0

    @property
    def verdict(self) -> str:
        return "above" if self.above else "not above"


def majority_class(predictions: Predictions) -> Predictions:
    """Always the most frequent gold label of these rows (the lowest on a tie), as one seed's predictions."""
    values, counts = np.unique(predictions.labels, return_counts=True)
    return Predictions(predictions.labels, np.full((1, len(predictions.labels)), values[np.argmax(counts)]))


def against_majority(tasks: dict[str, tuple[str, Predictions]], resamples: int = RESAMPLES,
                     classes: dict[str, int] | None = None) -> dict[str, AgainstMajority]:
    """Per task ({task: (metric, the method's predictions)}, class or candidate labels), the method against always
    predicting the majority class of its scored rows, on the same paired resamples as `paired_differences`."""
    majorities = {task: majority_class(predictions) for task, (_, predictions) in tasks.items()}
    differences = _resampled_differences({task: (metric, predictions, majorities[task])
                                          for task, (metric, predictions) in tasks.items()}, resamples, classes)
    result = {}
    for task, values in differences.items():
        metric, majority = tasks[task][0], majorities[task]
        reference = resampled_scores(metric, majority, np.arange(len(majority.labels))[None],
                                     (classes or {}).get(task, 2))[0]
        # rounded: a seed mean of identical scores may differ from them in the last bit, which is not "above"
        low = round(float(np.percentile(values[1:], 100 * (1 - LEVEL))), 6) + 0.0  # + 0.0: never -0.0
        result[task] = AgainstMajority(round(100 * float(reference), 6), round(float(values[0]), 6) + 0.0, low)
    return result


def percentile_interval(values: np.ndarray) -> tuple[float, float]:
    """The LEVEL interval of a statistic from its resampled values (row 0, the full set, left out)."""
    tail = 100 * (1 - LEVEL) / 2
    return float(np.percentile(values[1:], tail)), float(np.percentile(values[1:], 100 - tail))
