"""Two-level bootstrap intervals (test examples paired, seeds per side): the arithmetic against a plain numpy
re-implementation, the pairing, the seeds' spread, the verdicts and the bad inputs."""

import json

import numpy as np
import pytest
from scipy import stats

from gpt1.errors import UserError
from gpt1.eval.intervals import (Interval, Predictions, against_majority, paired_differences, read_predictions,
                                 resampled_scores)
from gpt1.eval.metrics import _pearson


def _classifier(correct_fraction: float, examples: int = 400, seeds: int = 2, offset: int = 0) -> Predictions:
    labels = np.arange(examples) % 2
    by_seed = []
    for seed in range(seeds):
        right = (np.arange(examples) + 37 * seed + offset) % 100 < correct_fraction * 100
        by_seed.append(np.where(right, labels, 1 - labels))
    return Predictions(labels=labels.astype(float), by_seed=np.asarray(by_seed, dtype=float))


def test_row_wise_pearson_equals_scipy_and_constant_rows_give_zero():
    rng = np.random.default_rng(1)
    gold, predicted = rng.normal(size=(3, 50)), rng.normal(size=(3, 50))
    predicted[1] += 2 * gold[1]
    for row in range(3):
        assert _pearson(gold, predicted)[row] == pytest.approx(stats.pearsonr(gold[row], predicted[row])[0])
    assert _pearson(gold[:1], np.ones((1, 50)))[0] == 0.0


def test_score_is_the_seed_mean_and_row_zero_is_the_whole_test_set():
    predictions = _classifier(0.8, seeds=2)
    rows = np.arange(400)[None, :]
    per_seed = [(seed_row == predictions.labels).mean() for seed_row in predictions.by_seed]
    assert resampled_scores("accuracy", predictions, rows)[0] == pytest.approx(np.mean(per_seed))
    spearman = resampled_scores("spearman", Predictions(np.arange(10.0), np.arange(10.0)[None] ** 3), rows[:, :10])
    assert spearman[0] == pytest.approx(1.0)


def test_the_bootstrap_scores_a_resample_as_evaluation_scores_that_test_set():
    """One implementation: the resampled metric of row r is `score` on the rows drawn, for every metric."""
    from gpt1.data.records import TaskSpec
    from gpt1.eval.metrics import score

    rng = np.random.default_rng(3)
    rows = rng.integers(0, 60, size=(20, 60))
    for labels, metrics in (((0, 1), ("f1", "matthews", "accuracy")), ((0, 1, 2), ("f1", "matthews"))):
        gold, predicted = rng.integers(0, len(labels), 60), rng.integers(0, len(labels), 60)
        spec = TaskSpec("t", "classification", tuple(map(str, labels)), metrics, "test")
        for metric in metrics:
            resampled = resampled_scores(metric, Predictions(gold.astype(float), predicted[None].astype(float)), rows,
                                         len(labels))
            assert [round(value, 6) for value in resampled] == [
                score(spec, gold[row].tolist(), predicted[row].tolist()).values[metric] for row in rows], metric


def test_a_clear_gain_is_supported_its_mirror_reversed_and_identical_methods_not_supported():
    better, worse = _classifier(0.9), _classifier(0.6)
    result = paired_differences({"a": ("accuracy", better, worse), "b": ("accuracy", better, better)}, resamples=500)
    assert result["a"].difference == pytest.approx(30.0)
    assert result["a"].low > 20 and result["a"].high < 40 and result["a"].verdict == "supported"
    # the same method twice: nothing between them but the draw of each side's seeds, around 0
    assert result["b"].difference == 0.0 and result["b"].low < 0 < result["b"].high
    assert result["b"].verdict == "not supported"
    assert result["avg"].difference == pytest.approx(15.0) and result["avg"].verdict == "supported"
    mirror = paired_differences({"a": ("accuracy", worse, better)}, resamples=500)
    assert mirror["a"].verdict == "reversed" and mirror["a"].high < 0


def test_pairing_narrows_the_interval_of_two_correlated_methods():
    # B is A with 8 of 400 answers flipped, one seed each: unpaired resampling would give an interval several
    # points wide.
    first = _classifier(0.7, seeds=1)
    flipped = first.by_seed.copy()
    flipped[0, :8] = 1 - flipped[0, :8]
    result = paired_differences({"t": ("accuracy", first, Predictions(first.labels, flipped))}, resamples=500)
    assert result["t"].high - result["t"].low < 3.0


def test_the_interval_is_deterministic():
    pair = {"t": ("accuracy", _classifier(0.7), _classifier(0.65, offset=3))}
    assert paired_differences(pair, resamples=200) == paired_differences(pair, resamples=200)


def test_a_method_predicting_the_majority_class_everywhere_is_not_above_it_and_a_better_one_is():
    """Five classes, the training split's majority class 0 (40 % of the test rows); the one-sided 95 % bound of
    method − majority class."""
    labels = np.repeat(np.arange(5), [160, 60, 60, 60, 60]).astype(float)
    constant = Predictions(labels, np.zeros((3, 400)))  # three seeds, each always class 0
    better = labels.copy()
    better[::5] = (better[::5] + 1) % 5  # 80 % right
    # a method barely above the rate: ahead by 2 rows of 400, well inside the resampling noise
    barely = np.zeros(400)
    barely[160:162] = labels[160:162]
    checks = against_majority({"constant": ("accuracy", constant, 0),
                               "better": ("accuracy", Predictions(labels, better[None]), 0),
                               "barely": ("accuracy", Predictions(labels, barely[None]), 0)}, resamples=500)
    assert checks["constant"].majority == 40.0 and checks["constant"].difference == 0.0
    assert checks["constant"].low == 0.0 and checks["constant"].verdict == "not above"
    assert checks["better"].difference == pytest.approx(40.0) and checks["better"].low > 30
    assert checks["better"].verdict == "above"
    assert checks["barely"].difference == pytest.approx(0.5) and not checks["barely"].above
    assert checks["constant"].seeds_counted and not checks["better"].seeds_counted
    # matthews: the majority class scores 0 on it, and the same verdicts follow
    five = {"constant": ("matthews", constant, 0), "better": ("matthews", Predictions(labels, better[None]), 0)}
    checks = against_majority(five, resamples=200, classes={"constant": 5, "better": 5})
    assert checks["constant"].majority == 0.0 and not checks["constant"].above and checks["better"].above


def test_the_majority_class_is_the_label_given_not_the_test_rows_own():
    """The training split's majority class (here 1) scored on test rows whose own majority is 0: always predicting it
    scores its share of the test rows, 30 %, and a method always predicting 0 is above it."""
    labels = np.repeat([0.0, 1.0], [280, 120])
    zeros = Predictions(labels, np.zeros((2, 400)))
    check = against_majority({"t": ("accuracy", zeros, 1)}, resamples=300)["t"]
    assert check.majority == pytest.approx(30.0) and check.difference == pytest.approx(40.0) and check.above


def _seeded_classifier(accuracies: list[float], examples: int = 1000, offset: int = 0) -> Predictions:
    """Binary predictions, one seed per accuracy: each seed right on a different stretch of the rows."""
    labels = (np.arange(examples) % 2).astype(float)
    by_seed = []
    for seed, accuracy in enumerate(accuracies):
        right = (np.arange(examples) * 7919 + 104729 * seed + offset) % examples < accuracy * examples
        by_seed.append(np.where(right, labels, 1 - labels))
    return Predictions(labels, np.asarray(by_seed, dtype=float))


def _numpy_two_level(first: Predictions, second: Predictions, resamples: int, seed: int) -> tuple[float, float]:
    """An independent two-level bootstrap of A − B accuracy ×100, a loop over resamples: rows drawn with
    replacement (the same for both), then each side's seeds drawn with replacement, each side's score the mean of
    its drawn seeds' accuracies on the drawn rows."""
    rng = np.random.default_rng(seed)
    examples, values = len(first.labels), []
    for _ in range(resamples):
        rows = rng.integers(0, examples, examples)
        scores = []
        for side in (first, second):
            drawn = rng.integers(0, len(side.by_seed), len(side.by_seed))
            scores.append(np.mean([(side.by_seed[s][rows] == side.labels[rows]).mean() for s in drawn]))
        values.append(100 * (scores[0] - scores[1]))
    return float(np.percentile(values, 2.5)), float(np.percentile(values, 97.5))


def _numpy_rows_only(first: Predictions, second: Predictions, resamples: int, seed: int) -> tuple[float, float]:
    """The test rows alone resampled, every seed kept: what an interval that ignores the seeds' spread gives."""
    rng = np.random.default_rng(seed)
    examples, values = len(first.labels), []
    for _ in range(resamples):
        rows = rng.integers(0, examples, examples)
        values.append(100 * np.subtract(*[np.mean([(p[rows] == side.labels[rows]).mean() for p in side.by_seed])
                                          for side in (first, second)]))
    return float(np.percentile(values, 2.5)), float(np.percentile(values, 97.5))


def test_seeds_that_disagree_widely_leave_a_gain_unsupported_that_the_test_rows_alone_would_support():
    """A: three seeds at 88, 62 and 80 % (mean 76.7); B: three at 71 %. On 1,000 test rows alone +5.7 is far
    outside the noise; with the seeds' spread it is not."""
    scattered, steady = _seeded_classifier([0.88, 0.62, 0.80]), _seeded_classifier([0.71] * 3, offset=11)
    rows_only = _numpy_rows_only(scattered, steady, 1000, seed=5)
    assert rows_only[0] > 0  # the test rows alone: supported
    interval = paired_differences({"t": ("accuracy", scattered, steady)})["t"]
    assert interval.difference == pytest.approx(100 * (np.mean([0.88, 0.62, 0.80]) - 0.71))
    assert interval.verdict == "not supported" and interval.seeds_counted
    assert interval.noise == "test examples and seeds"


def test_seeds_that_agree_keep_the_verdict_the_test_rows_give():
    agreeing, weaker = _seeded_classifier([0.78, 0.77, 0.79]), _seeded_classifier([0.71] * 3, offset=11)
    assert _numpy_rows_only(agreeing, weaker, 1000, seed=5)[0] > 0
    assert paired_differences({"t": ("accuracy", agreeing, weaker)})["t"].verdict == "supported"


@pytest.mark.parametrize("accuracies", [[0.88, 0.62, 0.80], [0.78, 0.77, 0.79], [0.9, 0.6, 0.75, 0.7, 0.8]])
def test_the_interval_equals_a_plain_numpy_two_level_bootstrap_within_its_noise(accuracies):
    first, second = _seeded_classifier(accuracies), _seeded_classifier([0.7, 0.72, 0.68], offset=11)
    # Many resamples on both sides: three seeds far apart make the resampled scores lumpy (all three draws the same
    # seed 1 time in 9), and a tail percentile near a lump moves with the draw.
    ours = paired_differences({"t": ("accuracy", first, second)}, resamples=12_000)["t"]
    low, high = _numpy_two_level(first, second, 12_000, seed=9)
    width = high - low
    assert ours.low == pytest.approx(low, abs=0.05 * width) and ours.high == pytest.approx(high, abs=0.05 * width)


def test_one_seed_a_side_is_an_interval_over_the_test_rows_only_and_says_so():
    one, three = _seeded_classifier([0.8]), _seeded_classifier([0.7, 0.72, 0.68], offset=11)
    result = paired_differences({"t": ("accuracy", one, three), "u": ("accuracy", three, three)}, resamples=300)
    assert not result["t"].seeds_counted and result["t"].noise == "test examples only (one seed)"
    assert result["u"].seeds_counted and not result["avg"].seeds_counted
    # with one seed on each side the seeds add nothing: the rows-only interval, as an independent loop gives it
    other = _seeded_classifier([0.7], offset=11)
    single = paired_differences({"t": ("accuracy", one, other)}, resamples=12_000)["t"]
    low, high = _numpy_rows_only(one, other, 12_000, seed=3)
    assert single.low == pytest.approx(low, abs=0.4) and single.high == pytest.approx(high, abs=0.4)


def test_trend_directions_follow_the_interval():
    assert Interval(5.0, 1.0, 9.0).direction == "rises"
    assert Interval(-5.0, -9.0, -1.0).direction == "falls"
    assert Interval(1.0, -2.0, 4.0).direction == "flat"


def _write_run(folder, labels, predictions):
    folder.mkdir(parents=True)
    folder.joinpath("predictions_test.jsonl").write_text(
        "".join(json.dumps({"index": i, "label": y, "prediction": p}) + "\n"
                for i, (y, p) in enumerate(zip(labels, predictions))))


def test_read_predictions_stacks_seeds_and_rejects_differing_rows_or_a_missing_run(tmp_path):
    _write_run(tmp_path / "seed1", [0, 1, 1], [0, 1, 0])
    _write_run(tmp_path / "seed2", [0, 1, 1], [1, 1, 1])
    read = read_predictions([tmp_path / "seed1", tmp_path / "seed2"])
    assert read.by_seed.tolist() == [[0, 1, 0], [1, 1, 1]] and read.labels.tolist() == [0, 1, 1]
    _write_run(tmp_path / "seed3", [1, 1, 1], [1, 1, 1])
    with pytest.raises(UserError, match="test rows differ from the other seeds'"):
        read_predictions([tmp_path / "seed1", tmp_path / "seed3"])
    with pytest.raises(UserError, match="seed9/predictions_test.jsonl not found; run the fine-tuning stages"):
        read_predictions([tmp_path / "seed9"])


def test_methods_scored_on_different_rows_are_refused():
    with pytest.raises(UserError, match="different test rows"):
        paired_differences({"t": ("accuracy", _classifier(0.7, examples=400), _classifier(0.7, examples=300))})


def test_the_intervals_are_the_same_bytes_whatever_threads_blas_is_given():
    """DVC leaves a job every core, Snakemake gives a one-thread job one (OPENBLAS_NUM_THREADS=1 and the like): a
    matrix product's sums are split by thread, and the bootstrap's drawn scores are such products, so it pins BLAS to
    one thread and its intervals do not depend on the engine."""
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(3)
    gold = rng.normal(size=1379)
    sides = [Predictions(gold, gold + rng.normal(scale=scale, size=(3, gold.size))) for scale in (0.8, 1.2)]
    tasks = {"sts_b": ("pearson", *sides)}
    by_threads = {}
    for threads in (1, 2):
        with threadpool_limits(limits=threads, user_api="blas"):
            by_threads[threads] = paired_differences(tasks, resamples=2000)
            unpinned = np.random.default_rng(0).integers(0, 3, size=(2000, gold.size)).astype(float) @ np.stack(
                [gold, gold ** 2, gold * 3], axis=-1)
        by_threads[f"unpinned {threads}"] = unpinned
    assert by_threads[1] == by_threads[2]
    # the check can fail: without the pin, the same products differ in their last bits between 1 and 2 threads
    assert not np.array_equal(by_threads["unpinned 1"], by_threads["unpinned 2"])
