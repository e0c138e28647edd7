"""How many resamples the bootstrap draws (gpt1/eval/intervals.py): the Monte-Carlo deviation it estimates for a
bound against the spread of that bound over generator seeds, the draws growing until every bound holds BOUND_SD,
memory bounded by blocks, "at the edge" verdicts, and the drawn-count metrics equal to the metrics on drawn rows."""

import numpy as np
import pytest

from gpt1.errors import UserError
from gpt1.eval import intervals
from gpt1.eval.intervals import (BOUND_SD, RESAMPLES, AgainstMajority, Interval, Predictions, against_majority,
                                 bound_sd, drawn_counts, paired_differences)
from gpt1.eval.metrics import drawn_metric_values, metric_values


def _regression(strength: float, examples: int, seeds: int, shift: int) -> Predictions:
    gold = np.random.default_rng(7).normal(size=examples)
    noise = np.random.default_rng(100 + shift)
    return Predictions(gold, np.stack([strength * gold + noise.normal(size=examples) for _ in range(seeds)]))


def _classifier(right: float, examples: int, seeds: int, shift: int) -> Predictions:
    labels = np.random.default_rng(8).integers(0, 3, examples)
    draws = np.random.default_rng(200 + shift)
    return Predictions(labels.astype(float), np.stack(
        [np.where(draws.random(examples) < right, labels, (labels + 1) % 3) for _ in range(seeds)]).astype(float))


def test_the_estimated_deviation_of_a_bound_is_its_spread_over_generator_seeds():
    """The deviation bound_sd estimates from one draw is the standard deviation of the bound over 40 draws with other
    generator seeds, within the estimate's own noise (a factor of 1.5 either way)."""
    tasks = {"t": ("pearson", _regression(0.6, 200, 3, 0), _regression(0.4, 200, 3, 1))}
    draws = [paired_differences(tasks, resamples=1000, rng_seed=seed)["t"] for seed in range(40)]
    for bound, estimate in (("low", "low_sd"), ("high", "high_sd")):
        spread = np.std([getattr(draw, bound) for draw in draws], ddof=1)
        estimated = np.mean([getattr(draw, estimate) for draw in draws])
        assert spread / 1.5 < estimated < spread * 1.5, (bound, spread, estimated)


def test_bound_sd_of_normal_values_is_the_sample_quantiles_asymptotic_deviation():
    values = np.random.default_rng(3).normal(size=200_000)
    expected = np.sqrt(0.025 * 0.975 / len(values)) / (np.exp(-1.96 ** 2 / 2) / np.sqrt(2 * np.pi))
    # the estimate spans ~140 order statistics here: about 9 % noise of its own
    assert bound_sd(values, 2.5) == pytest.approx(expected, rel=0.25)


def test_the_default_draws_until_every_bound_holds_its_deviation_and_no_more_than_it_needs():
    noisy = {"t": ("pearson", _regression(0.5, 800, 3, 2), _regression(0.3, 800, 3, 3))}
    result = paired_differences(noisy)
    assert result["t"].resamples > RESAMPLES
    assert max(result["t"].low_sd, result["t"].high_sd, result["avg"].low_sd, result["avg"].high_sd) <= BOUND_SD
    # a large test set with one seed a side: a narrow interval, whose bounds hold at the least count
    large = {"t": ("accuracy", _classifier(0.7, 20_000, 1, 4), _classifier(0.69, 20_000, 1, 5))}
    assert paired_differences(large)["t"].resamples == RESAMPLES
    check = against_majority({"t": ("pearson", _regression(0.5, 150, 3, 2), 0.0)})["t"]
    assert check.resamples >= RESAMPLES and check.low_sd <= BOUND_SD


def test_the_count_stops_at_its_ceiling_and_says_how_far_the_bounds_then_move(monkeypatch):
    monkeypatch.setattr(intervals, "MAX_RESAMPLES", 4000)
    result = paired_differences({"t": ("pearson", _regression(0.5, 150, 3, 2), _regression(0.3, 150, 3, 3))})["t"]
    assert result.resamples == 4000 and max(result.low_sd, result.high_sd) > BOUND_SD


def test_each_block_of_draws_holds_at_most_block_elements_row_indices(monkeypatch):
    monkeypatch.setattr(intervals, "BLOCK_ELEMENTS", 5000)
    seen = []
    counts = intervals.drawn_counts

    def recording(rows, examples):
        seen.append(rows.size)
        return counts(rows, examples)

    monkeypatch.setattr(intervals, "drawn_counts", recording)
    result = paired_differences({"t": ("accuracy", _classifier(0.7, 1000, 2, 6), _classifier(0.6, 1000, 2, 7))},
                                resamples=300)["t"]
    assert max(seen) <= 5000 and sum(seen) == 2 * 301 * 1000  # both sides, 300 resamples and the whole set
    assert result.resamples == 300 and result.low > 0


def test_a_bound_within_two_deviations_of_zero_is_at_the_edge():
    assert Interval(3.0, 0.08, 6.0, low_sd=0.05, high_sd=0.05).verdict == "at the edge"
    assert Interval(3.0, 0.12, 6.0, low_sd=0.05, high_sd=0.05).verdict == "supported"
    assert Interval(-3.0, -6.0, -0.05, low_sd=0.05, high_sd=0.05).verdict == "at the edge"
    assert Interval(1.0, -0.09, 2.0, low_sd=0.05, high_sd=0.05).verdict == "at the edge"
    assert Interval(1.0, -0.5, 2.0, low_sd=0.05, high_sd=0.05).verdict == "not supported"
    assert Interval(0.0, 0.0, 0.0).verdict == "not supported"  # identical runs: nothing moves
    assert Interval(3.0, 0.08, 6.0, low_sd=0.05, high_sd=0.05).direction == "at the edge"
    edge = AgainstMajority(40.0, 2.0, 0.06, low_sd=0.05)
    assert edge.verdict == "at the edge" and not edge.above
    assert AgainstMajority(40.0, 2.0, 0.2, low_sd=0.05).above


def test_the_average_pairs_resample_i_of_each_task_reusing_a_shorter_one_in_turn():
    short = intervals.Resampled(1.0, np.array([1.0, 2.0]), intervals.TWO_SIDED)
    long = intervals.Resampled(3.0, np.array([10.0, 20.0, 30.0, 40.0]), intervals.TWO_SIDED)
    both = intervals.average([short, long])
    assert both.full == 2.0 and both.values.tolist() == [5.5, 11.0, 15.5, 21.0]


@pytest.mark.parametrize("metric, classes", [("accuracy", 3), ("f1", 2), ("f1", 3), ("matthews", 3)])
def test_drawn_counts_give_the_metric_on_the_drawn_rows_exactly(metric, classes):
    rng = np.random.default_rng(4)
    gold, predicted = rng.integers(0, classes, 300), rng.integers(0, classes, 300)
    rows = rng.integers(0, 300, size=(50, 300))
    drawn = drawn_metric_values(metric, drawn_counts(rows, 300), gold, predicted, classes)
    assert drawn.tolist() == metric_values(metric, gold[rows], predicted[rows], classes).tolist()


def test_drawn_counts_give_pearsons_r_on_the_drawn_rows_to_rounding_and_spearman_asks_for_rows():
    rng = np.random.default_rng(5)
    gold = rng.normal(size=300) + 50  # far from 0: the sums are centred before they are formed
    predicted = 0.4 * gold + rng.normal(size=300)
    rows = rng.integers(0, 300, size=(50, 300))
    counts = drawn_counts(rows, 300)
    assert drawn_metric_values("pearson", counts, gold, predicted) == pytest.approx(
        metric_values("pearson", gold[rows], predicted[rows]), abs=1e-12)
    assert drawn_metric_values("pearson", counts[:1], gold, np.full(300, 2.0))[0] == 0.0
    with pytest.raises(UserError, match="spearman"):
        drawn_metric_values("spearman", counts, gold, predicted)
