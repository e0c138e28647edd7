"""Seeds paired across the two sides (`paired_differences(..., seeds_paired=...)`, what `gpt1 compare` uses when both
sides ran the same seeds): identical runs read exactly 0 [0, 0], the interval equals a plain numpy loop that draws one
set of seed indices for both sides, a shared seed effect cancels, bad input is refused; and the default (Table 5's
design, each side's seeds drawn on their own) gives, draw for draw, what it gave before pairing existed."""

import numpy as np
import pytest

from gpt1.errors import UserError
from gpt1.eval.intervals import Interval, Predictions, against_majority, paired_differences


def _seeded(accuracies: list[float], examples: int = 1000) -> Predictions:
    """Binary predictions, one seed per accuracy; seed s is right on one stretch of the rows, the same stretch start
    whatever the accuracy, so a side 3 points better on every seed is right on a superset of the other's rows: a seed
    effect the two sides share, as an experiment that changes one knob shares its seeds' head, data order and
    dropout."""
    labels = (np.arange(examples) % 2).astype(float)
    by_seed = [np.where((np.arange(examples) * 7919 + 104729 * seed) % examples < accuracy * examples, labels,
                        1 - labels) for seed, accuracy in enumerate(accuracies)]
    return Predictions(labels, np.asarray(by_seed, dtype=float))


def _numpy_paired_seeds(first: Predictions, second: Predictions, resamples: int, seed: int) -> tuple[float, float]:
    """An independent two-level bootstrap of A − B accuracy ×100 with paired seeds, a loop over resamples: rows drawn
    with replacement, then seed indices drawn with replacement, both the same for A and B; each side's score the
    mean of its drawn seeds' accuracies on the drawn rows."""
    rng = np.random.default_rng(seed)
    examples, seeds, values = len(first.labels), len(first.by_seed), []
    for _ in range(resamples):
        rows, drawn = rng.integers(0, examples, examples), rng.integers(0, seeds, seeds)
        a, b = (np.mean([(side.by_seed[s][rows] == side.labels[rows]).mean() for s in drawn])
                for side in (first, second))
        values.append(100 * (a - b))
    return float(np.percentile(values, 2.5)), float(np.percentile(values, 97.5))


def test_identical_runs_with_paired_seeds_read_exactly_zero_and_drawn_per_side_do_not():
    same = _seeded([0.88, 0.62, 0.80])
    tasks = {"t": ("accuracy", same, same), "u": ("accuracy", same, same)}
    paired = paired_differences(tasks, resamples=500, seeds_paired=["t", "u"])
    zero = Interval(0.0, 0.0, 0.0, seeds_counted=True, seeds_paired=True, resamples=500)
    assert paired == {"t": zero, "u": zero, "avg": zero}
    assert paired["t"].verdict == "not supported" and paired["t"].seeds == "paired"
    drawn_per_side = paired_differences(tasks, resamples=500)["t"]
    assert drawn_per_side.low < -5 and drawn_per_side.high > 5 and drawn_per_side.seeds == "per side"


def test_paired_seeds_give_the_interval_a_plain_numpy_loop_gives_within_its_noise():
    first, second = _seeded([0.91, 0.65, 0.83]), _seeded([0.86, 0.66, 0.75])
    ours = paired_differences({"t": ("accuracy", first, second)}, resamples=6000, seeds_paired=["t"])["t"]
    low, high = _numpy_paired_seeds(first, second, 6000, seed=9)
    width = high - low
    assert ours.difference == pytest.approx(100 * (np.mean([0.91, 0.65, 0.83]) - np.mean([0.86, 0.66, 0.75])))
    assert ours.low == pytest.approx(low, abs=0.05 * width) and ours.high == pytest.approx(high, abs=0.05 * width)


def test_a_seed_effect_both_sides_share_cancels_when_the_seeds_are_paired():
    """B is A 3 points better on every seed, whose own accuracies spread over 26 points: paired, the gain is clear;
    drawn per side, the seeds' spread hides it."""
    worse, better = _seeded([0.88, 0.62, 0.80]), _seeded([0.91, 0.65, 0.83])
    paired = paired_differences({"t": ("accuracy", better, worse)}, resamples=2000, seeds_paired=["t"])["t"]
    per_side = paired_differences({"t": ("accuracy", better, worse)}, resamples=2000)["t"]
    assert paired.difference == per_side.difference == pytest.approx(3.0)
    assert paired.verdict == "supported" and 0 < paired.low < 3 < paired.high < 6
    assert per_side.verdict == "not supported"


def test_the_average_is_paired_only_when_every_task_is():
    a, b = _seeded([0.8, 0.7]), _seeded([0.75, 0.72])
    result = paired_differences({"t": ("accuracy", a, b), "u": ("accuracy", b, a)}, resamples=200, seeds_paired=["t"])
    assert result["t"].seeds_paired and not result["u"].seeds_paired and not result["avg"].seeds_paired


def test_pairing_sides_that_ran_different_seed_counts_or_an_unknown_task_is_one_clear_error():
    two, three = _seeded([0.8, 0.7]), _seeded([0.8, 0.7, 0.6])
    with pytest.raises(UserError, match=r"^task 't': seeds paired, but one side ran 2 seeds and the other 3; pair "
                                        r"only sides that ran the same seeds$"):
        paired_differences({"t": ("accuracy", two, three)}, seeds_paired=["t"])
    with pytest.raises(UserError, match=r"^seeds paired for 'v', which are not among the tasks compared$"):
        paired_differences({"t": ("accuracy", two, two)}, seeds_paired=["t", "v"])


def _golden_side(metric: str, seeds: int, shift: int) -> Predictions:
    rng = np.random.default_rng(100 + shift)
    if metric == "pearson":
        gold = np.random.default_rng(1).normal(size=80)
        return Predictions(gold, np.stack([gold * (0.5 + 0.1 * s) + rng.normal(size=80) for s in range(seeds)]))
    gold = np.random.default_rng(2).integers(0, 3, 80).astype(float)
    return Predictions(gold, np.stack([np.where(rng.random(80) < 0.6, gold, (gold + 1) % 3) for _ in range(seeds)]))


def test_the_default_draws_exactly_what_it_drew_before_seeds_could_be_paired():
    """Table 5 (`gpt1 ablation`) leaves seeds_paired unset: its intervals must stay byte for byte. The values below
    were computed by intervals.py before `seeds_paired` existed (3, 3 / 3, 2 / 1, 3 seeds; accuracy, pearson, 3-class
    f1), and are compared exactly, Pearson's r (and the average it enters) to rounding: the bootstrap now forms its
    sums from how often each row is drawn, in another order. A fixed count of 500 draws as it did; the default draws
    as many as the bounds need."""
    tasks = {"acc": ("accuracy", _golden_side("accuracy", 3, 0), _golden_side("accuracy", 3, 1)),
             "cor": ("pearson", _golden_side("pearson", 3, 2), _golden_side("pearson", 2, 3)),
             "f1": ("f1", _golden_side("f1", 1, 4), _golden_side("f1", 3, 5))}
    result = paired_differences(tasks, resamples=500, classes={"f1": 3})
    expected = {
        "acc": (-3.3333333333333326, -16.05208333333333, 11.249999999999993, True),
        "cor": (-0.37603641973373847, -24.15851571107024, 22.713154073258114, True),
        "f1": (-2.286194724975932, -15.205391219978694, 10.655067474744003, False),
        "avg": (-1.9985214926810009, -12.499821074405014, 7.841023036232191, False)}
    assert list(result) == list(expected)
    for name, (difference, low, high, counted) in expected.items():
        interval = result[name]
        assert (interval.difference, interval.low, interval.high) == pytest.approx((difference, low, high), rel=1e-12)
        assert interval.seeds_counted == counted
    assert (result["acc"].low, result["acc"].high) == (-16.05208333333333, 11.249999999999993)
    assert not any(interval.seeds_paired for interval in result.values())
    check = against_majority({"acc": ("accuracy", _golden_side("accuracy", 3, 0), 1.0)}, resamples=500)["acc"]
    assert (check.majority, check.difference, check.low) == (37.5, 19.583333, 6.229167)
