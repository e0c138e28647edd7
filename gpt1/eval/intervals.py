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

How many resamples: at least RESAMPLES, then more, task by task, until every bound's Monte-Carlo standard
deviation (how far it would move with another draw of the bootstrap, estimated from the resampled values' order
statistics) is at most BOUND_SD points, or MAX_RESAMPLES are drawn. A large test set has a narrow interval and needs
few; a small one with spread-out seeds needs many. The draws come in blocks of at most BLOCK_ELEMENTS row indices,
so memory stays bounded whatever the test set's size or the count. A bound that still lies within EDGE_SDS of
those deviations of 0 could land on the other side of 0 with another draw: the verdict is then "at the edge",
never "supported". The average over tasks pairs resample i of each task (each task's resamples are independent of
the others'), reusing a task's resamples in turn where it drew fewer than another.

A method is also set against always predicting the majority class of the task's training split (what a model that
learnt nothing but the training labels' shares scores), on the same test resamples: its score is "above" the
majority class when the one-sided 95 % lower bound of method − majority class is above 0, and "not above"
otherwise.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Collection

import numpy as np
from threadpoolctl import threadpool_limits

from gpt1.errors import UserError
from gpt1.eval.metrics import drawn_metric_values, metric_values
from gpt1.layout import run_predictions

RESAMPLES = 2000  # the least any interval draws: enough to estimate how far its bounds move with the draw
MAX_RESAMPLES = 200_000
BOUND_SD = 0.05  # points: the most a bound's Monte-Carlo standard deviation may be
EDGE_SDS = 2.0  # a bound within this many of its deviations of 0 is "at the edge"
BLOCK_ELEMENTS = 1 << 22  # row indices drawn at a time (32 MB as int64)
LEVEL = 0.95
RNG_SEED = 0  # fixed: the same predictions give the same interval, byte for byte
TWO_SIDED = (100 * (1 - LEVEL) / 2, 100 - 100 * (1 - LEVEL) / 2)  # the percentiles of a two-sided interval
ONE_SIDED = (100 * (1 - LEVEL),)  # the percentile of a one-sided lower bound


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
    resamples: int = 0  # how many were drawn (the average: its largest task's count)
    low_sd: float = 0.0  # each bound's Monte-Carlo standard deviation, ×100
    high_sd: float = 0.0

    @property
    def at_the_edge(self) -> bool:
        """A bound so near 0 that another draw of the bootstrap could put it on the other side."""
        return abs(self.low) < EDGE_SDS * self.low_sd or abs(self.high) < EDGE_SDS * self.high_sd

    @property
    def verdict(self) -> str:
        if self.at_the_edge:
            return "at the edge"
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
DIRECTIONS = {"supported": "rises", "reversed": "falls", "not supported": "flat", "at the edge": "at the edge"}


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
    if metric == "spearman":  # ranks: the drawn rows themselves
        gold = predictions.labels[rows]
        per_seed = np.stack([metric_values(metric, gold, predicted[rows], classes)
                             for predicted in predictions.by_seed])
    else:
        counts = drawn_counts(rows, len(predictions.labels))
        per_seed = np.stack([drawn_metric_values(metric, counts, predictions.labels, predicted, classes)
                             for predicted in predictions.by_seed])
    if seed_draws is None:
        return per_seed.mean(axis=0)
    return np.take_along_axis(per_seed, seed_draws.T, axis=0).mean(axis=0)


def drawn_counts(rows: np.ndarray, examples: int) -> np.ndarray:
    """How often each resample (a row of `rows`, drawn row indices) draws each of `examples` examples."""
    offsets = (np.arange(len(rows)) * examples)[:, None]
    return np.bincount((rows + offsets).ravel(), minlength=len(rows) * examples).reshape(
        len(rows), examples).astype(np.float64)


def draw_indices(size: int, rng: np.random.Generator, count: int, full_first: bool) -> np.ndarray:
    """`count` bootstrap samples of indices 0..size-1 (test rows, or a side's seeds), drawn with replacement; with
    `full_first`, the first is every index once (the whole test set, every seed once)."""
    drawn = rng.integers(0, size, size=(count, size))
    if full_first:
        drawn[0] = np.arange(size)
    return drawn


# A statistic's values on a block of resamples: (test rows drawn, the generator, whether the block starts with the
# whole test set) → one value per row of the block. It draws its seeds itself, after the rows.
Block = Callable[[np.ndarray, np.random.Generator, bool], np.ndarray]


@dataclass(frozen=True)
class Resampled:
    """A statistic on the whole test set and on each resample, and each bound's Monte-Carlo deviation."""

    full: float
    values: np.ndarray  # the resamples, the whole test set left out
    percentiles: tuple[float, ...]

    @property
    def bounds(self) -> list[float]:
        return [float(np.percentile(self.values, percentile)) for percentile in self.percentiles]

    @property
    def bound_sds(self) -> list[float]:
        return [bound_sd(self.values, percentile) for percentile in self.percentiles]


def bound_sd(values: np.ndarray, percentile: float) -> float:
    """The Monte-Carlo standard deviation of a percentile of bootstrap values: half the distance between the
    percentiles one binomial standard deviation (√(p(1 − p)/n)) either side of it, the order statistics' own spread
    (as the sample quantile's asymptotic deviation, √(p(1 − p)/n) / density, with the density estimated there)."""
    p = percentile / 100
    spread = np.sqrt(p * (1 - p) / len(values))
    lower, upper = np.percentile(values, [100 * max(0.0, p - spread), 100 * min(1.0, p + spread)])
    return float(upper - lower) / 2


def resample(blocks: dict[str, tuple[int, Block]], rng: np.random.Generator, percentiles: tuple[float, ...],
             resamples: int | None = None, with_average: bool = False) -> dict[str, Resampled]:
    """Each statistic ({name: (its test rows, Block)}) on the whole test set and on its resamples, drawn name after
    name from `rng`. `resamples` fixes the count; None draws RESAMPLES, then more for each statistic whose bounds'
    Monte-Carlo deviation exceeds BOUND_SD (up to MAX_RESAMPLES). `with_average`: also "avg", the mean over the
    statistics of resample i (a statistic with fewer resamples reused in turn), for which the largest counts grow
    until its bounds hold too.

    BLAS runs on one thread meanwhile: a matrix product's sums are split by thread, so its last bits would depend on
    the threads the engine gives the job (DVC leaves every core to BLAS, Snakemake one to a job of one thread), and
    every interval must be the same bytes under both."""
    with threadpool_limits(limits=1, user_api="blas"):
        return _resample(blocks, rng, percentiles, resamples, with_average)


def _resample(blocks: dict[str, tuple[int, Block]], rng: np.random.Generator, percentiles: tuple[float, ...],
              resamples: int | None, with_average: bool) -> dict[str, Resampled]:
    values: dict[str, list[np.ndarray]] = {name: [] for name in blocks}
    wanted = dict.fromkeys(blocks, resamples or RESAMPLES)
    drawn = dict.fromkeys(blocks, 0)
    while True:
        for name, (examples, block) in blocks.items():
            values[name] += [block(rows, rng, first) for rows, first in
                             _row_blocks(examples, rng, wanted[name] - drawn[name], first=drawn[name] == 0)]
            drawn[name] = wanted[name]
        result = {name: Resampled(float(np.concatenate(parts)[0]), np.concatenate(parts)[1:], percentiles)
                  for name, parts in values.items()}
        if with_average and result:
            result["avg"] = average(list(result.values()))
        if resamples is not None:
            return result
        grown = {name: _enough(result[name], drawn[name]) for name in blocks}
        if with_average and result:
            most = max(drawn.values())
            for name in blocks:
                if drawn[name] == most:
                    grown[name] = max(grown[name], _enough(result["avg"], most))
        if all(grown[name] <= drawn[name] for name in blocks):
            return result
        wanted = {name: max(grown[name], drawn[name]) for name in blocks}


def _enough(resampled: Resampled, drawn: int) -> int:
    """The resample count at which the worst bound's deviation should reach BOUND_SD (it shrinks as 1/√count),
    rounded up to whole RESAMPLES with a tenth to spare; at most MAX_RESAMPLES."""
    worst = max(resampled.bound_sds)
    if worst <= BOUND_SD or drawn >= MAX_RESAMPLES:
        return drawn
    needed = drawn * (worst / BOUND_SD) ** 2 * 1.1
    return int(min(MAX_RESAMPLES, RESAMPLES * np.ceil(needed / RESAMPLES)))


def average(parts: list[Resampled]) -> Resampled:
    """The mean of statistics resampled on their own, resample i with resample i (a shorter one reused in turn)."""
    count = max(len(part.values) for part in parts)
    stacked = [np.resize(part.values, count) for part in parts]  # np.resize repeats a shorter array in turn
    return Resampled(float(np.mean([part.full for part in parts])), np.mean(stacked, axis=0), parts[0].percentiles)


def _row_blocks(examples: int, rng: np.random.Generator, count: int, first: bool):
    """(rows, starts with the whole test set) for `count` more resamples (one more, the whole set, when `first`), in
    blocks of at most BLOCK_ELEMENTS indices."""
    total = count + first
    size = max(1, BLOCK_ELEMENTS // examples)
    for start in range(0, total, size):
        block_first = first and start == 0
        yield draw_indices(examples, rng, min(size, total - start), block_first), block_first


def side_block(metric: str, predictions: Predictions, classes: int = 2) -> Block:
    """One side's score ×100 on each resample: the test rows given, its own seeds drawn."""
    def block(rows: np.ndarray, rng: np.random.Generator, first: bool) -> np.ndarray:
        seeds = draw_indices(len(predictions.by_seed), rng, len(rows), first)
        return 100 * resampled_scores(metric, predictions, rows, classes, seeds)
    return block


def difference_block(metric: str, first_side: Predictions, second_side: Predictions, classes: int = 2,
                     seeds_paired: bool = False) -> Block:
    """A − B ×100 on each resample, the same rows for both; the seeds drawn once for both (`seeds_paired`) or for each
    side on its own, A's first."""
    def block(rows: np.ndarray, rng: np.random.Generator, first: bool) -> np.ndarray:
        if seeds_paired:
            seeds = draw_indices(len(first_side.by_seed), rng, len(rows), first)
            scores = (resampled_scores(metric, first_side, rows, classes, seeds),
                      resampled_scores(metric, second_side, rows, classes, seeds))
        else:
            scores = tuple(resampled_scores(metric, side, rows, classes,
                                            draw_indices(len(side.by_seed), rng, len(rows), first))
                           for side in (first_side, second_side))
        return 100 * (scores[0] - scores[1])
    return block


def paired_differences(tasks: dict[str, tuple[str, Predictions, Predictions]], resamples: int | None = None,
                       classes: dict[str, int] | None = None, rng_seed: int = RNG_SEED,
                       seeds_paired: Collection[str] = ()) -> dict[str, Interval]:
    """Interval of method A − method B per task and for their average, ×100.

    `tasks`: {task: (metric, A's predictions, B's predictions)}; the same rows are drawn for A and B, the seeds for
    each on its own, except in the tasks named in `seeds_paired` (both sides ran the same seeds, in the same order):
    there the same seed indices are drawn for both. `resamples`: a fixed count (None: as many as the bounds need).
    `classes`: {task: its label count} where a metric needs it (f1 is binary for 2, the default). `rng_seed`: the
    generator's seed; another one shows how far the bounds move with the bootstrap's own draw."""
    resampled = _resampled_differences(tasks, resamples, classes, rng_seed, seeds_paired, TWO_SIDED)
    counted = {task: min(len(first.by_seed), len(second.by_seed)) > 1 for task, (_, first, second) in tasks.items()}
    paired = {task: task in seeds_paired for task in tasks}
    if tasks:
        counted["avg"], paired["avg"] = all(counted.values()), all(paired.values())
    return {name: Interval(result.full, *result.bounds, seeds_counted=counted[name], seeds_paired=paired[name],
                           resamples=len(result.values), low_sd=result.bound_sds[0], high_sd=result.bound_sds[1])
            for name, result in resampled.items()}


def _resampled_differences(tasks: dict[str, tuple[str, Predictions, Predictions]], resamples: int | None,
                           classes: dict[str, int] | None, rng_seed: int, seeds_paired: Collection[str],
                           percentiles: tuple[float, ...], with_average: bool = True) -> dict[str, Resampled]:
    """Per task (and their average), A − B ×100 on the whole test set and on each two-level resample."""
    _check_paired_seeds(tasks, seeds_paired)
    blocks = {}
    for task, (metric, first, second) in tasks.items():
        if not np.array_equal(first.labels, second.labels):
            raise UserError(f"task '{task}': the two methods were scored on different test rows")
        blocks[task] = (len(first.labels), difference_block(metric, first, second, (classes or {}).get(task, 2),
                                                            task in seeds_paired))
    return resample(blocks, np.random.default_rng(rng_seed), percentiles, resamples, with_average)


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
    resamples: int = 0
    low_sd: float = 0.0  # the bound's Monte-Carlo standard deviation

    @property
    def above(self) -> bool:
        return self.verdict == "above"

    @property
    def verdict(self) -> str:
        if abs(self.low) < EDGE_SDS * self.low_sd:
            return "at the edge"
        return "above" if self.low > 0 else "not above"

    @property
    def noise(self) -> str:
        return NOISE[self.seeds_counted]


def always(label: float, predictions: Predictions) -> Predictions:
    """Always `label`, on the rows `predictions` were scored on, as one (deterministic) seed's predictions."""
    return Predictions(predictions.labels, np.full((1, len(predictions.labels)), float(label)))


def against_majority(tasks: dict[str, tuple[str, Predictions, float]], resamples: int | None = None,
                     classes: dict[str, int] | None = None) -> dict[str, AgainstMajority]:
    """Per task ({task: (metric, the method's predictions, the training split's majority label)}), the method
    against always predicting that label, on two-level resamples drawn as `paired_differences` draws them (the
    majority class is one deterministic prediction: only the method's seeds are drawn)."""
    majorities = {task: always(label, predictions) for task, (_, predictions, label) in tasks.items()}
    resampled = _resampled_differences({task: (metric, predictions, majorities[task])
                                        for task, (metric, predictions, _) in tasks.items()}, resamples, classes,
                                       RNG_SEED, (), ONE_SIDED, with_average=False)
    result = {}
    for task, values in resampled.items():
        metric, predictions, majority = tasks[task][0], tasks[task][1], majorities[task]
        reference = resampled_scores(metric, majority, np.arange(len(majority.labels))[None],
                                     (classes or {}).get(task, 2))[0]
        # rounded: a seed mean of identical scores may differ from them in the last bit, which is not "above"
        low = round(values.bounds[0], 6) + 0.0  # + 0.0: never -0.0
        result[task] = AgainstMajority(round(100 * float(reference), 6), round(values.full, 6) + 0.0, low,
                                       seeds_counted=len(predictions.by_seed) > 1, resamples=len(values.values),
                                       low_sd=round(values.bound_sds[0], 6))
    return result
