"""Transfer over pretraining: the curve's points come from the right runs, the trend's numbers are the runs' own,
its interval is the two-level bootstrap over test examples and seeds, and a missing run is named."""

import json

import matplotlib.image
import numpy as np
import pandas as pd
import pytest

from gpt1 import layout
from gpt1.data.records import TaskSpec
from gpt1.errors import UserError
from gpt1.eval.intervals import Predictions, paired_differences
from gpt1.eval.transfer_curve import pretraining_gap, tokens_for_gap
from gpt1.stages.transfer_figure import run_transfer_curve

SPEC = TaskSpec("nli", "entailment", ("entailment", "neutral", "contradiction"), ("accuracy",), "x", "SNLI")
ROWS = 200
STEPS = [3, 30]
FINAL = 300
SEEDS = [1, 2]
# accuracy on test per point (updates) and seed; dev is 0.05 above
ACCURACY = {0: (0.40, 0.36), 3: (0.34, 0.36), 30: (0.50, 0.52), FINAL: (0.60, 0.66)}


def _run(folder, accuracy):
    """A run folder: test predictions with the first `accuracy` share of the rows right, and its metrics.json."""
    folder.mkdir(parents=True)
    labels = np.arange(ROWS) % 3
    right = np.arange(ROWS) < round(accuracy * ROWS)
    predicted = np.where(right, labels, (labels + 1) % 3)
    rows = [{"index": i, "label": int(g), "prediction": int(p)} for i, (g, p) in enumerate(zip(labels, predicted))]
    folder.joinpath("predictions_test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    folder.joinpath("metrics.json").write_text(json.dumps({"dev": {"accuracy": accuracy + 0.05},
                                                           "test": {"accuracy": accuracy}}))


def _runs(results):
    for index, seed in enumerate(SEEDS):
        _run(layout.finetune_run("nli", "no_pretrain", seed, results), ACCURACY[0][index])
        _run(layout.finetune_run("nli", "full", seed, results), ACCURACY[FINAL][index])
        for step in STEPS:
            _run(layout.transfer_curve_run("nli", step, seed, results), ACCURACY[step][index])
    tasks = results / "tasks"
    (tasks / "nli").mkdir(parents=True)
    (tasks / "nli" / "task.json").write_text(SPEC.to_json())
    return tasks


def _curve(results, tasks, with_zero=True):
    return run_transfer_curve(results, tasks, ["nli"], STEPS, FINAL, SEEDS, tokens_per_update=1024,
                              with_zero=with_zero)


def test_the_curve_runs_from_no_pretrain_through_the_checkpoints_to_full(tmp_path):
    tasks = _runs(tmp_path)
    table = _curve(tmp_path, tasks)
    test = table[table.split == "test"].set_index("updates")
    assert list(test.index) == [0, 3, 30, FINAL]
    assert test["mean"].tolist() == pytest.approx([100 * np.mean(ACCURACY[u]) for u in [0, 3, 30, FINAL]])
    assert test.loc[30, "std"] == pytest.approx(100 * np.std(ACCURACY[30], ddof=1))
    assert test.loc[FINAL, "tokens"] == FINAL * 1024 and set(test["seeds"]) == {2}
    dev = table[table.split == "dev"].set_index("updates")["mean"]
    assert (dev - test["mean"]).tolist() == pytest.approx([5.0] * 4)
    assert pd.read_csv(tmp_path / "transfer_curve.csv").shape == (8, 8)
    pixels = matplotlib.image.imread(tmp_path / "transfer_curve.png")
    assert pixels.shape[0] > 200 and (pixels[..., :3] < 0.5).mean() > 0.005  # lines and text drawn
    first = (tmp_path / "transfer_curve.png").read_bytes()
    _curve(tmp_path, tasks)
    assert (tmp_path / "transfer_curve.png").read_bytes() == first  # deterministic figure


def test_the_trend_gives_last_minus_first_with_its_two_level_interval_direction_and_rank_correlation(tmp_path):
    tasks = _runs(tmp_path)
    _curve(tmp_path, tasks)
    trend = pd.read_csv(tmp_path / "transfer_curve_trend.csv", keep_default_na=False).set_index("split")
    gain = 100 * (np.mean(ACCURACY[FINAL]) - np.mean(ACCURACY[0]))
    assert trend.loc["test", "last_minus_first"] == pytest.approx(gain)
    assert trend.loc["dev", "last_minus_first"] == pytest.approx(gain)
    assert (trend.loc["test", "first_updates"], trend.loc["test", "last_updates"]) == (0, FINAL)

    def predictions(point):
        labels = np.arange(ROWS) % 3
        by_seed = [np.where(np.arange(ROWS) < round(a * ROWS), labels, (labels + 1) % 3) for a in ACCURACY[point]]
        return Predictions(labels.astype(float), np.array(by_seed, dtype=float))

    expected = paired_differences({"nli": ("accuracy", predictions(FINAL), predictions(0))})["nli"]
    assert float(trend.loc["test", "low"]) == pytest.approx(expected.low, abs=1e-4)
    assert float(trend.loc["test", "high"]) == pytest.approx(expected.high, abs=1e-4)
    assert expected.low < gain < expected.high and expected.low > 0 and trend.loc["test", "direction"] == "rises"
    assert trend.loc["test", "noise"] == "test examples and seeds"
    assert trend.loc["dev", "low"] == "" and trend.loc["dev", "direction"] == ""  # no test rows for dev
    # test means 38, 35, 51, 63: a dip below the zero point, then rising; Spearman over the four points
    assert float(trend.loc["test", "spearman_rho"]) == pytest.approx(0.8)


def test_without_no_pretrain_the_curve_starts_at_the_first_checkpoint(tmp_path):
    tasks = _runs(tmp_path)
    for seed in SEEDS:  # the method left out of finetune.methods: its runs must not be read
        (layout.finetune_run("nli", "no_pretrain", seed, tmp_path) / "metrics.json").unlink()
    table = _curve(tmp_path, tasks, with_zero=False)
    assert sorted(set(table["updates"])) == [3, 30, FINAL]
    trend = pd.read_csv(tmp_path / "transfer_curve_trend.csv").set_index("split")
    assert trend.loc["test", "first_updates"] == 3
    assert trend.loc["test", "last_minus_first"] == pytest.approx(100 * (np.mean(ACCURACY[FINAL]) - np.mean(ACCURACY[3])))


def test_a_missing_run_is_named_with_the_stage_that_writes_it(tmp_path):
    tasks = _runs(tmp_path)
    (layout.transfer_curve_run("nli", 30, 2, tmp_path) / "metrics.json").unlink()
    with pytest.raises(UserError, match=r"step30/seed2/metrics.json not found; run the transfer_curve stage"):
        _curve(tmp_path, tasks)
    assert not (tmp_path / "transfer_curve.csv").exists()  # nothing half-written


def _curve_of_means(scores: dict[str, dict[int, float]], tokens_per_update: int = 1000) -> pd.DataFrame:
    """A curve table as curve_table writes it: {task: {updates: test mean}}, with dev rows that must be ignored."""
    rows = [{"task": task, "metric": "accuracy", "split": split, "updates": updates,
             "tokens": updates * tokens_per_update, "mean": mean if split == "test" else -mean, "std": 0.0, "seeds": 2}
            for task, points in scores.items() for updates, mean in points.items() for split in ("dev", "test")]
    return pd.DataFrame(rows)


def test_the_gap_is_the_mean_over_tasks_of_each_point_minus_no_pretrain_on_test():
    table = _curve_of_means({"a": {0: 50.0, 10: 52.0, 100: 56.0, 1000: 60.0}, "b": {0: 30.0, 10: 30.0, 100: 32.0, 1000: 36.0}})
    gap = pretraining_gap(table)
    assert gap["updates"].tolist() == [10, 100, 1000]
    assert gap["tokens"].tolist() == [10_000, 100_000, 1_000_000]
    assert gap["gap"].tolist() == pytest.approx([1.0, 4.0, 8.0])


def test_the_tokens_for_a_gap_follow_a_line_in_log_tokens_and_none_when_it_does_not_rise():
    rising = pd.DataFrame({"updates": [1, 10, 100], "tokens": [1e3, 1e4, 1e5], "gap": [2.0, 4.0, 6.0]})
    assert tokens_for_gap(rising, 12.0) == pytest.approx(1e8)  # +2 a decade: 12 at 10^8
    falling = rising.assign(gap=[6.0, 4.0, 2.0])
    assert tokens_for_gap(falling, 12.0) is None
    assert tokens_for_gap(rising.head(1), 12.0) is None


def test_the_gap_needs_the_no_pretrain_point():
    with pytest.raises(ValueError, match="no_pretrain"):
        pretraining_gap(_curve_of_means({"a": {10: 52.0, 100: 56.0}}))
