"""Intervals for differences between fine-tuning methods: a two-level bootstrap over test examples and seeds.

A method's score on one task is its metric on the test rows, averaged over its seeds. Two sources of noise move it:
which test examples were drawn, and which seeds ran. Each bootstrap resample draws the test rows with replacement,
the same rows for both methods (paired), and then each method's seeds with replacement, every side on its own (its
seeds are its own runs); the method's score on the resample is the mean, over its drawn seeds, of the metric on
the drawn rows. This is the stratified bootstrap of Agarwal et al. 2021 (runs resampled within each task) with the
test examples resampled as well, as Bouthillier et al. 2021 recommend: a verdict must not rest on which seeds
happened to run. The average over tasks resamples each task's rows and seeds independently and averages the
per-task differences. A difference is called "supported" when its 95 % interval lies above 0, "reversed" when it
lies below 0, and "not supported" otherwise. With one seed on a side there is no seed spread to draw from: the
interval then covers the test examples only, and says so (`Interval.seeds_counted`).

Where both sides ran the same seeds and one knob differs between them (`gpt1 compare` of two experiments), seed s
of one side and seed s of the other share their head's initialisation, data order and dropout streams: they are
paired, as the test rows are. `paired_differences(..., seeds_paired=...)` then draws one set of seed indices per
resample for both sides, so identical runs differ by exactly 0 on every resample (0 [0, 0]) rather than by the
spread of two independent draws of the same seeds. Table 5 (gpt1/eval/analysis.py) leaves it unset: its methods
start from different models, so seed s of two methods shares only its batch order (docs/results.md says why).

A method is also set against always predicting the majority class of the task's training split (what a model that
learnt nothing but the training labels' shares scores), on the same test resamples: its score is "above" the
majority class when the one-sided 95 % lower bound of method − majority class is above 0, and "not above"
otherwise.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Collection

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
    difference: float  # on the full test set with every seed once, ×100
    low: float
    high: float
    seeds_counted: bool = True  # False: a side had one seed, so only the test examples were resampled
    seeds_paired: bool = False  # True: the same seed indices were drawn for both sides (they ran the same seeds)

    @property
    def verdict(self) -> str:
        if self.low > 0:
            return "supported"
        if self.high < 0:
            return "reversed"
        return "not supported"

    @property
    def direction(self) -> str:
        """The verdict of a trend's later − earlier point: it rises, falls, or is flat within the noise."""
        return DIRECTIONS[self.verdict]

    @property
    def noise(self) -> str:
        """What the interval counts, as the output files say it."""
        return NOISE[self.seeds_counted]

    @property
    def seeds(self) -> str:
        """How the seeds were drawn, as the output files say it."""
        return SEED_DESIGNS[self.seeds_paired]


NOISE = {True: "test examples and seeds", False: "test examples only (one seed)"}
SEED_DESIGNS = {True: "paired", False: "per side"}
DIRECTIONS = {"supported": "rises", "reversed": "falls", "not supported": "flat"}


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


def resampled_scores(metric: str, predictions: Predictions, rows: np.ndarray, classes: int = 2,
                     seed_draws: np.ndarray | None = None) -> np.ndarray:
    """The metric on each resample (`rows`: resamples × examples indices), averaged over the seeds `seed_draws`
    picks for that resample (resamples × seeds indices; None: every seed once); evaluation's own implementation
    (gpt1/eval/metrics.py), vectorised over the resamples. `classes`: the task's label count (f1)."""
    gold = predictions.labels[rows]
    per_seed = np.stack([metric_values(metric, gold, predicted[rows], classes) for predicted in predictions.by_seed])
    if seed_draws is None:
        return per_seed.mean(axis=0)
    return np.take_along_axis(per_seed, seed_draws.T, axis=0).mean(axis=0)


def draw_rows(examples: int, rng: np.random.Generator, resamples: int = RESAMPLES) -> np.ndarray:
    """Row indices of `resamples` bootstrap samples of a test set, the full set as row 0."""
    rows = rng.integers(0, examples, size=(resamples + 1, examples))
    rows[0] = np.arange(examples)
    return rows


def draw_seeds(seeds: int, rng: np.random.Generator, resamples: int = RESAMPLES) -> np.ndarray:
    """Seed indices of `resamples` bootstrap samples of a method's seeds (as many as it ran); row 0: each seed once."""
    draws = rng.integers(0, seeds, size=(resamples + 1, seeds))
    draws[0] = np.arange(seeds)
    return draws


def bootstrap_scores(metric: str, predictions: Predictions, rows: np.ndarray, rng: np.random.Generator,
                     classes: int = 2) -> np.ndarray:
    """One side's score on each two-level resample: the test rows given (shared with the other side), its own seeds
    drawn here; row 0 is the whole test set with every seed once."""
    return resampled_scores(metric, predictions, rows, classes,
                            draw_seeds(len(predictions.by_seed), rng, len(rows) - 1))


def paired_seed_scores(metric: str, first: Predictions, second: Predictions, rows: np.ndarray,
                       rng: np.random.Generator, classes: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Both sides' scores on each two-level resample when seed index i is the same seed on both sides: one draw of
    seed indices serves both, as one draw of rows does; row 0 is the whole test set with every seed once."""
    seed_draws = draw_seeds(len(first.by_seed), rng, len(rows) - 1)
    return (resampled_scores(metric, first, rows, classes, seed_draws),
            resampled_scores(metric, second, rows, classes, seed_draws))


def paired_differences(tasks: dict[str, tuple[str, Predictions, Predictions]], resamples: int = RESAMPLES,
                       classes: dict[str, int] | None = None, rng_seed: int = RNG_SEED,
                       seeds_paired: Collection[str] = ()) -> dict[str, Interval]:
    """Interval of method A − method B per task and for their average, ×100.

    `tasks`: {task: (metric, A's predictions, B's predictions)}; the same rows are drawn for A and B, the seeds for
    each on its own, except in the tasks named in `seeds_paired` (both sides ran the same seeds, in the same order):
    there the same seed indices are drawn for both. `classes`: {task: its label count} where a metric needs it (f1 is
    binary for 2, the default). `rng_seed`: the generator's seed; another one shows how far the bounds move with the
    bootstrap's own draw."""
    differences = _resampled_differences(tasks, resamples, classes, rng_seed, seeds_paired)
    counted = {task: min(len(first.by_seed), len(second.by_seed)) > 1 for task, (_, first, second) in tasks.items()}
    paired = {task: task in seeds_paired for task in tasks}
    if differences:
        differences["avg"] = np.mean(list(differences.values()), axis=0)
        counted["avg"], paired["avg"] = all(counted.values()), all(paired.values())
    return {name: Interval(float(values[0]), *percentile_interval(values), seeds_counted=counted[name],
                           seeds_paired=paired[name])
            for name, values in differences.items()}


def _resampled_differences(tasks: dict[str, tuple[str, Predictions, Predictions]], resamples: int,
                           classes: dict[str, int] | None, rng_seed: int = RNG_SEED,
                           seeds_paired: Collection[str] = ()) -> dict[str, np.ndarray]:
    """Per task, A − B ×100 on the whole test set (row 0) and on each two-level resample, drawn task after task."""
    _check_paired_seeds(tasks, seeds_paired)
    rng = np.random.default_rng(rng_seed)
    differences = {}
    for task, (metric, first, second) in tasks.items():
        if not np.array_equal(first.labels, second.labels):
            raise UserError(f"task '{task}': the two methods were scored on different test rows")
        rows = draw_rows(len(first.labels), rng, resamples)
        count = (classes or {}).get(task, 2)
        if task in seeds_paired:
            scores = paired_seed_scores(metric, first, second, rows, rng, count)
        else:  # each side's seeds on its own: A's drawn first, then B's (the order Table 5's draws were made in)
            scores = (bootstrap_scores(metric, first, rows, rng, count),
                      bootstrap_scores(metric, second, rows, rng, count))
        differences[task] = 100 * (scores[0] - scores[1])
    return differences


def _check_paired_seeds(tasks: dict[str, tuple[str, Predictions, Predictions]], seeds_paired: Collection[str]) -> None:
    """Seeds are paired index for index, so both sides of a paired task must have run as many seeds."""
    unknown = sorted(set(seeds_paired) - set(tasks))
    if unknown:
        raise UserError(f"seeds paired for {', '.join(map(repr, unknown))}, which are not among the tasks compared")
    for task in seeds_paired:
        first, second = tasks[task][1], tasks[task][2]
        if len(first.by_seed) != len(second.by_seed):
            raise UserError(f"task '{task}': seeds paired, but one side ran {len(first.by_seed)} seeds and the other "
                            f"{len(second.by_seed)}; pair only sides that ran the same seeds")


@dataclass(frozen=True)
class AgainstMajority:
    """A method's score on one task against always predicting the majority class of the task's training split."""

    majority: float  # the majority class's score on the scored test rows, ×100 (accuracy: that class's share)
    difference: float  # method − majority class on those rows, ×100
    low: float  # the one-sided LEVEL lower bound of the difference
    seeds_counted: bool = True  # False: the method had one seed

    @property
    def above(self) -> bool:
        return self.low > 0

    @property
    def verdict(self) -> str:
        return "above" if self.above else "not above"

    @property
    def noise(self) -> str:
        return NOISE[self.seeds_counted]


def always(label: float, predictions: Predictions) -> Predictions:
    """Always `label`, on the rows `predictions` were scored on, as one (deterministic) seed's predictions."""
    return Predictions(predictions.labels, np.full((1, len(predictions.labels)), float(label)))


def against_majority(tasks: dict[str, tuple[str, Predictions, float]], resamples: int = RESAMPLES,
                     classes: dict[str, int] | None = None) -> dict[str, AgainstMajority]:
    """Per task ({task: (metric, the method's predictions, the training split's majority label)}), the method
    against always predicting that label, on two-level resamples drawn as `paired_differences` draws them (the
    majority class is one deterministic prediction: only the method's seeds are drawn)."""
    majorities = {task: always(label, predictions) for task, (_, predictions, label) in tasks.items()}
    differences = _resampled_differences({task: (metric, predictions, majorities[task])
                                          for task, (metric, predictions, _) in tasks.items()}, resamples, classes)
    result = {}
    for task, values in differences.items():
        metric, predictions, majority = tasks[task][0], tasks[task][1], majorities[task]
        reference = resampled_scores(metric, majority, np.arange(len(majority.labels))[None],
                                     (classes or {}).get(task, 2))[0]
        # rounded: a seed mean of identical scores may differ from them in the last bit, which is not "above"
        low = round(float(np.percentile(values[1:], 100 * (1 - LEVEL))), 6) + 0.0  # + 0.0: never -0.0
        result[task] = AgainstMajority(round(100 * float(reference), 6), round(float(values[0]), 6) + 0.0, low,
                                       seeds_counted=len(predictions.by_seed) > 1)
    return result


def percentile_interval(values: np.ndarray) -> tuple[float, float]:
    """The LEVEL interval of a statistic from its resampled values (row 0, the full set, left out)."""
    tail = 100 * (1 - LEVEL) / 2
    return float(np.percentile(values[1:], tail)), float(np.percentile(values[1:], 100 - tail))
