"""Table 5 and Figure 2 (left) from scores: shape, arithmetic, and the findings' verdicts."""

import json

import pandas as pd
import pytest

from gpt1 import analysis
from gpt1.errors import UserError
from gpt1.records import TaskSpec

SPECS = {
    "sent": TaskSpec("sent", "classification", ("neg", "pos"), ("accuracy",), "x", "SST-2"),
    "sim": TaskSpec("sim", "similarity", (), ("pearson", "spearman"), "x", "STS-B"),
}


def _scores(values):
    """values: {variant: {task: [per-seed primary metric]}} -> the scores.csv layout."""
    rows = []
    for variant, tasks in values.items():
        for task, per_seed in tasks.items():
            metric = SPECS[task].metrics[0]
            for seed, value in enumerate(per_seed, start=1):
                rows.append({"task": task, "variant": variant, "seed": seed, "metric": metric, "value": value})
                rows.append({"task": task, "variant": variant, "seed": seed, "metric": "other", "value": 0.0})
    return pd.DataFrame(rows)


def test_table_is_mean_over_seeds_times_100_with_average():
    scores = _scores({"full": {"sent": [0.8, 0.9], "sim": [0.5, 0.7]},
                      "no_pretrain": {"sent": [0.6, 0.6], "sim": [0.1, 0.3]}})
    mean, std = analysis.ablation_table(scores, SPECS)
    assert list(mean.index) == ["full", "no_pretrain"] and list(mean.columns) == ["avg", "sent", "sim"]
    assert mean.loc["full", "sent"] == pytest.approx(85.0) and mean.loc["full", "sim"] == pytest.approx(60.0)
    assert mean.loc["full", "avg"] == pytest.approx(72.5)
    assert std.loc["no_pretrain", "sent"] == pytest.approx(0.0)
    assert std.loc["full", "sent"] == pytest.approx(7.07, abs=0.01)


def _write_predictions(root, values):
    """values: {variant: {task: [per-seed fraction correct]}} -> 200 test predictions per run folder."""
    for variant, tasks in values.items():
        for task, per_seed in tasks.items():
            for seed, fraction in enumerate(per_seed, start=1):
                folder = root / task / variant / f"seed{seed}"
                folder.mkdir(parents=True)
                rows = []
                for index in range(200):
                    label = index % 2
                    right = index < fraction * 200
                    rows.append({"index": index, "label": label if task == "sent" else label / 2,
                                 "prediction": (label if right else 1 - label) if task == "sent"
                                 else (label / 2 if right else 0.25 + 0.001 * index)})
                folder.joinpath("predictions_test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_findings_are_computed_verdicts_with_intervals(tmp_path):
    values = {"full": {"sent": [0.9, 0.9], "sim": [0.9, 0.9]}, "no_pretrain": {"sent": [0.6, 0.6], "sim": [0.5, 0.5]},
              "no_aux_lm": {"sent": [0.9, 0.9], "sim": [0.9, 0.9]}, "lstm": {"sent": [1.0, 1.0], "sim": [1.0, 1.0]}}
    _write_predictions(tmp_path, values)
    mean = pd.DataFrame({"avg": [0.0] * 4, "sent": [0.0] * 4, "sim": [0.0] * 4}, index=list(values))
    intervals = analysis.method_intervals(tmp_path, SPECS, list(values), [1, 2])
    assert intervals["no_pretrain"]["sent"].difference == pytest.approx(30.0)
    text = analysis.findings(mean, intervals, {"sent": 50_000, "sim": 500})
    assert text[0].startswith("Pre-training: full − w/o pre-training = +") and "— supported at 95 %" in text[0]
    assert "sent +0.0 [+0.0, +0.0] (not supported)" in text[1] and "larger data sets (here sent)" in text[1]
    assert "Architecture: Transformer − LSTM = -" in text[2] and "— reversed at 95 %" in text[2]


def test_ablation_files(tmp_path):
    for task, spec in SPECS.items():
        (tmp_path / "tasks" / task).mkdir(parents=True)
        (tmp_path / "tasks" / task / "task.json").write_text(spec.to_json())
        (tmp_path / "tasks" / task / "train.jsonl").write_text("{}\n" * 20)
    _scores({"full": {"sent": [0.9], "sim": [0.6]}, "no_pretrain": {"sent": [0.7], "sim": [0.2]}}).to_csv(
        tmp_path / "scores.csv", index=False)
    _write_predictions(tmp_path / "finetune", {"full": {"sent": [0.9], "sim": [0.9]},
                                               "no_pretrain": {"sent": [0.7], "sim": [0.9]}})
    analysis.run_ablation(tmp_path / "scores.csv", tmp_path / "tasks", tmp_path / "finetune", ["sent", "sim"], [1],
                          1500, tmp_path / "ablation.csv", tmp_path / "ablation_std.csv", tmp_path / "intervals.csv",
                          tmp_path / "ablation.md")
    table = pd.read_csv(tmp_path / "ablation.csv", index_col="method")
    assert table.loc["no_pretrain", "avg"] == pytest.approx(45.0)
    markdown = (tmp_path / "ablation.md").read_text()
    assert "| Transformer w/o pre-training | 45.0 ± 0.0 |" in markdown and "74.7" in markdown
    assert "| Transformer w/o pre-training | +10.0 [" in markdown and "matches" not in markdown
    intervals = pd.read_csv(tmp_path / "intervals.csv")
    sent = intervals[(intervals.comparison == "full - no_pretrain") & (intervals.column == "sent")].iloc[0]
    assert sent.difference == pytest.approx(20.0) and sent.verdict == "supported"
    assert set(intervals.column) == {"avg", "sent", "sim"}


def test_missing_scores_is_a_clear_error(tmp_path):
    with pytest.raises(UserError, match="run `gpt1 evaluate` first"):
        analysis.run_ablation(tmp_path / "scores.csv", tmp_path, tmp_path, ["sent"], [1], None, tmp_path / "a.csv",
                              tmp_path / "b.csv", tmp_path / "i.csv", tmp_path / "c.md")


def test_layer_transfer_table_and_figure(tmp_path):
    for layers in range(3):
        for seed in (1, 2):
            folder = tmp_path / "layer_transfer" / "nli" / f"layers{layers}" / f"seed{seed}"
            folder.mkdir(parents=True)
            accuracy = 0.4 + 0.1 * layers + 0.01 * seed
            folder.joinpath("metrics.json").write_text(json.dumps({"dev": {"accuracy": accuracy},
                                                                   "test": {"accuracy": accuracy - 0.05}}))
    table = analysis.run_layer_transfer(tmp_path, ["nli"], [0, 1, 2], [1, 2], tmp_path / "lt.csv", tmp_path / "lt.png")
    dev = table[table.split == "dev"].set_index("layers")["mean"]
    assert dev.tolist() == pytest.approx([0.415, 0.515, 0.615])
    assert (tmp_path / "lt.png").read_bytes()[:4] == b"\x89PNG"
    first = (tmp_path / "lt.png").read_bytes()
    analysis.run_layer_transfer(tmp_path, ["nli"], [0, 1, 2], [1, 2], tmp_path / "lt.csv", tmp_path / "lt.png")
    assert (tmp_path / "lt.png").read_bytes() == first  # deterministic figure
