"""Paired bootstrap intervals: the arithmetic, the pairing, the verdicts and the bad inputs."""

import json

import numpy as np
import pytest
from scipy import stats

from gpt1.errors import UserError
from gpt1.eval.intervals import (Predictions, against_majority, paired_differences, read_predictions,
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
    assert (result["b"].difference, result["b"].low, result["b"].high) == (0.0, 0.0, 0.0)
    assert result["b"].verdict == "not supported"
    assert result["avg"].difference == pytest.approx(15.0) and result["avg"].verdict == "supported"
    mirror = paired_differences({"a": ("accuracy", worse, better)}, resamples=500)
    assert mirror["a"].verdict == "reversed" and mirror["a"].high < 0


def test_pairing_narrows_the_interval_of_two_correlated_methods():
    # B is A with 8 of 400 answers flipped: unpaired resampling would give an interval several points wide.
    first = _classifier(0.7, seeds=1)
    flipped = first.by_seed.copy()
    flipped[0, :8] = 1 - flipped[0, :8]
    result = paired_differences({"t": ("accuracy", first, Predictions(first.labels, flipped))}, resamples=500)
    assert result["t"].high - result["t"].low < 3.0


def test_the_interval_is_deterministic():
    pair = {"t": ("accuracy", _classifier(0.7), _classifier(0.65, offset=3))}
    assert paired_differences(pair, resamples=200) == paired_differences(pair, resamples=200)


def test_a_method_predicting_the_majority_class_everywhere_is_not_above_it_and_a_better_one_is():
    """Issue 48: five classes, the largest 40 % of the scored rows; the one-sided 95 % bound of method − majority."""
    labels = np.repeat(np.arange(5), [160, 60, 60, 60, 60]).astype(float)
    constant = Predictions(labels, np.zeros((3, 400)))  # three seeds, each always class 0
    better = labels.copy()
    better[::5] = (better[::5] + 1) % 5  # 80 % right
    # a method barely above the rate: ahead by 2 rows of 400, well inside the resampling noise
    barely = np.zeros(400)
    barely[160:162] = labels[160:162]
    checks = against_majority({"constant": ("accuracy", constant),
                               "better": ("accuracy", Predictions(labels, better[None])),
                               "barely": ("accuracy", Predictions(labels, barely[None]))}, resamples=500)
    assert checks["constant"].majority == 40.0 and checks["constant"].difference == 0.0
    assert checks["constant"].low == 0.0 and checks["constant"].verdict == "not above"
    assert checks["better"].difference == pytest.approx(40.0) and checks["better"].low > 30
    assert checks["better"].verdict == "above"
    assert checks["barely"].difference == pytest.approx(0.5) and not checks["barely"].above
    # matthews: the majority class scores 0 on it, and the same verdicts follow
    five = {"constant": ("matthews", constant), "better": ("matthews", Predictions(labels, better[None]))}
    checks = against_majority(five, resamples=200, classes={"constant": 5, "better": 5})
    assert checks["constant"].majority == 0.0 and not checks["constant"].above and checks["better"].above


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
