"""Table 5 and Figure 2 (left) from scores: shape, arithmetic, and the findings' verdicts."""

import json

import pandas as pd
import matplotlib.image
import pytest

from gpt1.eval import analysis
from gpt1.stages import evaluate
from gpt1.stages.ablation import run_ablation
from gpt1.stages.layer_figure import run_layer_transfer
from gpt1.errors import UserError
from gpt1.data.records import TaskSpec
from gpt1.params.method_section import MethodParams
from gpt1.params.schema import load_params
from tiny import ROOT

# Table 5's methods as params.yaml holds them, in its order.
METHODS = load_params(ROOT / "params.yaml").methods

SPECS = {
    "sent": TaskSpec("sent", "classification", ("neg", "pos"), ("accuracy",), "x", "SST-2"),
    "sim": TaskSpec("sim", "similarity", (), ("pearson", "spearman"), "x", "STS-B"),
}
ALL_SPECS = {**SPECS, "cola": TaskSpec("cola", "classification", ("bad", "good"), ("matthews",), "x", "CoLA")}


def _scores(values):
    """values: {method: {task: [per-seed primary metric]}} -> the scores.csv layout."""
    rows = []
    for method, tasks in values.items():
        for task, per_seed in tasks.items():
            metric = ALL_SPECS[task].primary_metric
            for seed, value in enumerate(per_seed, start=1):
                rows.append({"task": task, "method": method, "seed": seed, "metric": metric, "value": value})
                rows.append({"task": task, "method": method, "seed": seed, "metric": "other", "value": 0.0})
    return pd.DataFrame(rows)


def _summary(values):
    """values as `_scores` takes them -> the scores_summary.csv layout, as the evaluate stage summarises."""
    return evaluate.summarise(_scores(values))


def _write_summary(values, root):
    _summary(values).to_csv(root / "scores_summary.csv", index=False, float_format="%.6f")


def test_table_is_mean_over_seeds_times_100_with_average():
    summary = _summary({"full": {"sent": [0.8, 0.9], "sim": [0.5, 0.7]},
                        "no_pretrain": {"sent": [0.6, 0.6], "sim": [0.1, 0.3]}})
    mean, std = analysis.ablation_table(summary, SPECS, METHODS)
    assert list(mean.index) == ["full", "no_pretrain"] and list(mean.columns) == ["avg", "sent", "sim"]
    assert mean.loc["full", "sent"] == pytest.approx(85.0) and mean.loc["full", "sim"] == pytest.approx(60.0)
    assert mean.loc["full", "avg"] == pytest.approx(72.5)
    assert std.loc["no_pretrain", "sent"] == pytest.approx(0.0)
    assert std.loc["full", "sent"] == pytest.approx(7.07, abs=0.01)


def _write_predictions(root, values):
    """values: {method: {task: [per-seed fraction correct]}} -> 200 test predictions per run folder."""
    for method, tasks in values.items():
        for task, per_seed in tasks.items():
            for seed, fraction in enumerate(per_seed, start=1):
                folder = root / method / task / f"seed{seed}"
                folder.mkdir(parents=True)
                rows = []
                for index in range(200):
                    label = index % 2
                    right = index < fraction * 200
                    regression = ALL_SPECS[task].is_regression
                    rows.append({"index": index, "label": label / 2 if regression else label,
                                 "prediction": (label / 2 if right else 0.25 + 0.001 * index) if regression
                                 else (label if right else 1 - label)})
                folder.joinpath("predictions_test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_findings_are_computed_verdicts_with_intervals(tmp_path):
    values = {"full": {"sent": [0.9, 0.9], "sim": [0.9, 0.9]}, "no_pretrain": {"sent": [0.6, 0.6], "sim": [0.5, 0.5]},
              "no_aux_lm": {"sent": [0.9, 0.9], "sim": [0.9, 0.9]}, "lstm": {"sent": [1.0, 1.0], "sim": [1.0, 1.0]}}
    _write_predictions(tmp_path / "finetune", values)
    mean = pd.DataFrame({"avg": [0.0] * 4, "sent": [0.0] * 4, "sim": [0.0] * 4}, index=list(values))
    intervals = analysis.method_intervals(tmp_path, SPECS, list(values), [1, 2])
    assert intervals["no_pretrain"]["sent"].difference == pytest.approx(30.0)
    text = analysis.findings(mean, intervals, {"sent": 50_000, "sim": 500}, METHODS)
    assert text[0].startswith("Pre-training: full − w/o pre-training = +") and "— supported at 95 %" in text[0]
    assert "sent +0.0 [+0.0, +0.0] (not supported)" in text[1] and "larger data sets (here sent)" in text[1]
    assert "Architecture: Transformer − LSTM = -" in text[2] and "— reversed at 95 %" in text[2]


def test_a_method_added_to_the_params_gets_its_finding(tmp_path):
    """Findings read their comparisons from the methods' entries in params: a new entry needs no line in the
    analysis. One without a paper row or a named comparison is compared by its label."""
    tiny_lr = MethodParams(label="Transformer at a tiny rate", meaning="full, tiny rate", starts_from="transformer",
                           auxiliary_lm=True, lr=1e-6, finding="", finding_by_size=False)
    values = {"full": {"sent": [0.9, 0.9], "sim": [0.9, 0.9]}, "tiny_lr": {"sent": [0.5, 0.5], "sim": [0.5, 0.5]},
              "no_pretrain": {"sent": [0.6, 0.6], "sim": [0.5, 0.5]}}
    _write_predictions(tmp_path / "finetune", values)
    mean = pd.DataFrame({"avg": [0.0] * 3, "sent": [0.0] * 3, "sim": [0.0] * 3}, index=list(values))
    intervals = analysis.method_intervals(tmp_path, SPECS, list(values), [1, 2])
    text = analysis.findings(mean, intervals, {"sent": 50_000, "sim": 500}, {**METHODS, "tiny_lr": tiny_lr})
    assert len(text) == 2 and text[1].startswith("Pre-training: full − w/o pre-training = +")
    assert text[0].startswith("full − Transformer at a tiny rate = +") and "(not in the paper)" in text[0]
    assert text[0].endswith("— supported at 95 %.")


def _baseline_entry(test, dev=None):
    """One baseline as `gpt1 baselines` writes it: metrics per split (fractions) and notes."""
    return {"dev": dev or test, "notes": [], "test": test}


BASELINES_JSON = {  # the real layout: {task: {baseline: {"dev", "notes", "test"}}}
    "cola": {"majority": {**_baseline_entry({"matthews": 0.0}), "label": 0},
             "tfidf_logreg": _baseline_entry({"matthews": 0.1})},
    "sent": {"majority": {**_baseline_entry({"accuracy": 0.75}), "label": 0},  # the one to beat here
             "tfidf_logreg": _baseline_entry({"accuracy": 0.7})},
    "sim": {"majority": {**_baseline_entry({"pearson": 0.0, "spearman": 0.0}),
                         "notes": ["test: pearson is undefined (predictions are constant ...); reported as 0"]},
            "tfidf_cosine": _baseline_entry({"pearson": 0.65, "spearman": 0.7},
                                            dev={"pearson": 0.99, "spearman": 0.99})},
}


def _run_ablation(root, tasks, seeds, baselines=BASELINES_JSON):
    """A results tree under root (task.json, scores_summary.csv, predictions, baselines.json), then the ablation stage."""
    for task in tasks:
        (root / "tasks" / task).mkdir(parents=True)
        (root / "tasks" / task / "task.json").write_text(ALL_SPECS[task].to_json())
        (root / "tasks" / task / "train.jsonl").write_text("{}\n" * 20)
    (root / "baselines.json").write_text(json.dumps(baselines, indent=2, sort_keys=True))
    return run_ablation(root, root / "tasks", tasks, seeds, 1500, METHODS)


def test_ablation_files(tmp_path):
    _write_summary({"full": {"sent": [0.9], "sim": [0.6]}, "no_pretrain": {"sent": [0.7], "sim": [0.2]}}, tmp_path)
    _write_predictions(tmp_path / "finetune", {"full": {"sent": [0.9], "sim": [0.9]},
                                               "no_pretrain": {"sent": [0.7], "sim": [0.9]}})
    _run_ablation(tmp_path, ["sent", "sim"], [1])
    table = pd.read_csv(tmp_path / "ablation.csv", index_col="method")
    assert table.loc["no_pretrain", "avg"] == pytest.approx(45.0)
    markdown = (tmp_path / "ablation.md").read_text()
    assert "| Transformer w/o pre-training | 45.0 ± 0.0 |" in markdown and "74.7" in markdown
    assert "| Transformer w/o pre-training | +10.0 [" in markdown and "matches" not in markdown
    intervals = pd.read_csv(tmp_path / "ablation_intervals.csv")
    sent = intervals[(intervals.comparison == "full - no_pretrain") & (intervals.column == "sent")].iloc[0]
    assert sent.difference == pytest.approx(20.0) and sent.verdict == "supported"
    assert set(intervals.column) == {"avg", "sent", "sim"}


def _write_skewed_predictions(root, method, correct_every):
    """sent's 200 test rows, 70 % label 0; a method right on all but every `correct_every`-th row (None: it predicts
    label 0 everywhere), one seed."""
    folder = root / "finetune" / method / "sent" / "seed1"
    folder.mkdir(parents=True)
    labels = [0 if index < 140 else 1 for index in range(200)]
    predictions = [0 if correct_every is None else (1 - label if index % correct_every == 0 else label)
                   for index, label in enumerate(labels)]
    folder.joinpath("predictions_test.jsonl").write_text("".join(
        json.dumps({"index": index, "label": label, "prediction": prediction}) + "\n"
        for index, (label, prediction) in enumerate(zip(labels, predictions))))


def test_a_score_not_above_the_majority_class_is_marked(tmp_path):
    """Issue 48: always predicting the larger class (70 %) is marked in Table 5 and the CSV; 95 % right is not; a
    score (sim) has no majority class."""
    _write_summary({"full": {"sent": [0.95], "sim": [0.9]}, "no_pretrain": {"sent": [0.7], "sim": [0.9]}}, tmp_path)
    _write_skewed_predictions(tmp_path, "full", 20)
    _write_skewed_predictions(tmp_path, "no_pretrain", None)
    _write_predictions(tmp_path / "finetune", {"full": {"sim": [0.9]}, "no_pretrain": {"sim": [0.9]}})
    _run_ablation(tmp_path, ["sent", "sim"], [1])
    markdown = (tmp_path / "ablation.md").read_text()
    table_5 = markdown.split("The paper (Table 5")[0]
    assert "| Transformer w/o pre-training | 80.0 ± 0.0 | 70.0 ± 0.0 † | 90.0 ± 0.0 |" in table_5
    assert "| Transformer w/ aux LM (full) | 92.5 ± 0.0 | 95.0 ± 0.0 | 90.0 ± 0.0 |" in table_5
    assert "† not above the majority class (one-sided 95 %)" in table_5
    assert "| method − majority class | sent |\n|---|---|\n| (majority class's score) | 70.0 |" in markdown
    assert "| Transformer w/ aux LM (full) | +25.0 [≥ +19.0] above |" in markdown
    assert "| Transformer w/o pre-training | +0.0 [≥ +0.0] not above † |" in markdown
    assert "- Majority class: not above it (one-sided 95 %)" in markdown
    assert markdown.rstrip().endswith("Transformer w/o pre-training on sent.")
    intervals = pd.read_csv(tmp_path / "ablation_intervals.csv")
    against = intervals[intervals.comparison.str.endswith(" - majority class")]
    assert against[["comparison", "column", "difference", "verdict"]].values.tolist() == [
        ["full - majority class", "sent", 25.0, "above"], ["no_pretrain - majority class", "sent", 0.0, "not above"]]
    assert against.low.iloc[0] > 10 and against.low.iloc[1] == 0.0 and against.high.isna().all()
    assert intervals[intervals.comparison == "full - no_pretrain"].high.notna().all()


def test_full_against_the_best_baseline_per_task(tmp_path):
    _write_summary({"full": {"sent": [0.9, 0.8], "sim": [0.6, 0.6], "cola": [0.3, 0.3]}}, tmp_path)
    _write_predictions(tmp_path / "finetune", {"full": {"sent": [0.9, 0.8], "sim": [0.9, 0.9], "cola": [0.8, 0.8]}})
    _run_ablation(tmp_path, ["sent", "sim", "cola"], [1, 2])
    table = pd.read_csv(tmp_path / "ablation_baselines.csv")
    assert list(table.columns) == ["task", "metric", "full", "best_baseline", "baseline", "difference"]
    assert table.values.tolist() == [["sent", "accuracy", 85.0, 75.0, "majority", 10.0],  # majority counts too
                                     ["sim", "pearson", 60.0, 65.0, "tfidf_cosine", -5.0],  # test, not dev
                                     ["cola", "matthews", 30.0, 10.0, "tfidf_logreg", 20.0]]
    markdown = (tmp_path / "ablation.md").read_text()
    section = markdown.split("## Against the non-neural baselines")[1].split("## Findings")[0]
    assert "| sent | accuracy | 85.0 | 75.0 | majority | +10.0 | full ahead |" in section
    assert "| sim | pearson | 60.0 | 65.0 | tfidf_cosine | -5.0 | baseline ahead |" in section
    assert "| cola | matthews | 30.0 | 10.0 | tfidf_logreg | +20.0 | full ahead |" in section
    findings = markdown.split("## Findings")[1]
    assert "- Baselines: full beats the best non-neural baseline on 2 of 3 tasks (not on sim).\n" in findings


def test_baseline_finding_counts_a_tie_as_no_win():
    comparison = pd.DataFrame({"task": ["a", "b"], "difference": [0.0, 1.0]})
    assert analysis.baseline_finding(comparison) == (
        "Baselines: full beats the best non-neural baseline on 1 of 2 tasks (not on a).")
    assert analysis.baseline_finding(comparison.iloc[1:]).endswith("on 1 of 1 tasks.")


def test_missing_scores_is_a_clear_error(tmp_path):
    with pytest.raises(UserError, match="run `gpt1 evaluate` first"):
        run_ablation(tmp_path, tmp_path, ["sent"], [1], None, METHODS)


@pytest.mark.parametrize("baselines, message", [
    (None, r"baselines.json not found; run `gpt1 baselines` first"),
    ({"sent": BASELINES_JSON["sent"]}, r"baselines.json has no task sim; re-run `gpt1 baselines`"),
])
def test_missing_baselines_is_a_clear_error(tmp_path, baselines, message):
    _write_summary({"full": {"sent": [0.9], "sim": [0.6]}}, tmp_path)
    with pytest.raises(UserError, match=message):
        if baselines is None:
            (tmp_path / "baselines.json").unlink(missing_ok=True)
            run_ablation(tmp_path, tmp_path, ["sent", "sim"], [1], None, METHODS)
        else:
            _run_ablation(tmp_path, ["sent", "sim"], [1], baselines)
    assert not (tmp_path / "ablation.md").exists()  # checked before anything is written


def _write_metrics(folder, accuracy):
    """A run's metrics.json (test 0.05 below dev) and its 200 test predictions, right on the share test gives."""
    folder.mkdir(parents=True)
    folder.joinpath("metrics.json").write_text(json.dumps({"dev": {"accuracy": accuracy},
                                                           "test": {"accuracy": accuracy - 0.05}}))
    right = round(200 * (accuracy - 0.05))
    folder.joinpath("predictions_test.jsonl").write_text("".join(
        json.dumps({"index": index, "label": index % 2, "prediction": index % 2 if index < right else 1 - index % 2})
        + "\n" for index in range(200)))


def _layer_transfer_runs(root, depth=3, seeds=(1, 2)):
    """layer_transfer runs for k < depth and finetune full runs (k = depth), accuracy 0.4 + 0.1 k + 0.01 seed."""
    for seed in seeds:
        for layers in range(depth):
            _write_metrics(root / "layer_transfer" / "nli" / f"layers{layers}" / f"seed{seed}",
                           0.4 + 0.1 * layers + 0.01 * seed)
        _write_metrics(root / "finetune" / "full" / "nli" / f"seed{seed}", 0.4 + 0.1 * depth + 0.01 * seed)


def _run_layer_transfer(root):
    return run_layer_transfer(root, ["nli"], [0, 1, 2], [1, 2], 3)


def test_layer_transfer_table_and_figure(tmp_path):
    _layer_transfer_runs(tmp_path)
    table = _run_layer_transfer(tmp_path)
    dev = table[table.split == "dev"].set_index("layers")["mean"]
    assert dev.tolist() == pytest.approx([0.415, 0.515, 0.615, 0.715])  # k = 3 from the finetune full runs
    assert table["std"].tolist() == pytest.approx([0.00707] * 8, abs=1e-5)  # std over the two seeds
    pixels = matplotlib.image.imread(tmp_path / "layer_transfer.png")
    assert pixels.shape[0] > 200 and pixels.shape[1] > 200  # a figure, not a stub
    colours = set(map(tuple, pixels.reshape(-1, pixels.shape[-1]).round(2)))
    assert len(colours) > 10 and (pixels[..., :3] < 0.5).mean() > 0.005  # lines and text drawn, not blank
    first = (tmp_path / "layer_transfer.png").read_bytes()
    _run_layer_transfer(tmp_path)
    assert (tmp_path / "layer_transfer.png").read_bytes() == first  # deterministic figure


def test_layer_transfer_reads_all_layers_from_the_finetune_full_run(tmp_path):
    _layer_transfer_runs(tmp_path)
    _write_metrics(tmp_path / "layer_transfer" / "nli" / "layers3" / "seed1", 0.0)  # a stray run must be ignored
    (tmp_path / "finetune" / "full" / "nli" / "seed2" / "metrics.json").write_text(json.dumps(
        {"dev": {"accuracy": 0.9}, "test": {"accuracy": 0.8}}))
    table = _run_layer_transfer(tmp_path)
    full = table[(table.split == "test") & (table.layers == 3)].iloc[0]
    assert full["mean"] == pytest.approx((0.71 - 0.05 + 0.8) / 2)


def test_layer_transfer_trend_per_task(tmp_path):
    _layer_transfer_runs(tmp_path)
    _run_layer_transfer(tmp_path)
    trend = pd.read_csv(tmp_path / "layer_transfer_trend.csv", keep_default_na=False).set_index("split")
    assert list(trend.columns) == ["task", "all_minus_none", "low", "high", "direction", "noise", "spearman_rho",
                                   "spearman_p"]
    assert trend.loc["dev", "all_minus_none"] == pytest.approx(0.3)  # mean over seeds, all − none
    assert trend.loc["test", "spearman_rho"] == pytest.approx(1.0)  # rising with k
    # test: +30 points over 200 rows and two close seeds, far beyond the noise of both
    assert 0 < float(trend.loc["test", "low"]) < 0.3 < float(trend.loc["test", "high"])
    assert trend.loc["test", "direction"] == "rises" and trend.loc["test", "noise"] == "test examples and seeds"
    assert trend.loc["dev", "direction"] == ""  # dev has no interval: only test predictions are resampled


def test_a_layer_transfer_that_loses_accuracy_falls(tmp_path):
    for seed in (1, 2):
        for layers in range(3):
            _write_metrics(tmp_path / "layer_transfer" / "nli" / f"layers{layers}" / f"seed{seed}", 0.8 - 0.1 * layers)
        _write_metrics(tmp_path / "finetune" / "full" / "nli" / f"seed{seed}", 0.45)
    _run_layer_transfer(tmp_path)
    trend = pd.read_csv(tmp_path / "layer_transfer_trend.csv").set_index("split")
    assert trend.loc["test", "direction"] == "falls" and trend.loc["test", "high"] < 0


def test_layer_transfer_names_the_missing_run(tmp_path):
    _layer_transfer_runs(tmp_path)
    (tmp_path / "finetune" / "full" / "nli" / "seed2" / "metrics.json").unlink()
    with pytest.raises(UserError, match=r"full/nli/seed2/metrics.json not found; run the finetune stage \(method full\)"):
        _run_layer_transfer(tmp_path)


def test_the_majority_class_is_the_training_examples_one_as_the_baselines_recorded(tmp_path):
    """The baselines' majority class (label 1 here, from the training examples) is what the † mark compares with,
    even where the test rows' own majority is the other label (0, 70 % of them)."""
    _write_summary({"full": {"sent": [0.95], "sim": [0.9]}, "no_pretrain": {"sent": [0.7], "sim": [0.9]}}, tmp_path)
    _write_skewed_predictions(tmp_path, "full", 20)
    _write_skewed_predictions(tmp_path, "no_pretrain", None)
    _write_predictions(tmp_path / "finetune", {"full": {"sim": [0.9]}, "no_pretrain": {"sim": [0.9]}})
    baselines = {**BASELINES_JSON, "sent": {**BASELINES_JSON["sent"],
                                            "majority": {**BASELINES_JSON["sent"]["majority"], "label": 1}}}
    _run_ablation(tmp_path, ["sent", "sim"], [1], baselines)
    markdown = (tmp_path / "ablation.md").read_text()
    assert "| (majority class's score) | 30.0 |" in markdown
    assert "| Transformer w/o pre-training | +40.0 [≥ +" in markdown and "70.0 ± 0.0 †" not in markdown
    assert "the most frequent label of the training examples fine-tuning uses" in markdown


def test_a_baselines_file_without_the_majority_label_names_the_stage_to_re_run(tmp_path):
    _write_summary({"full": {"sent": [0.95], "sim": [0.9]}}, tmp_path)
    _write_skewed_predictions(tmp_path, "full", 20)
    _write_predictions(tmp_path / "finetune", {"full": {"sim": [0.9]}})
    old = {**BASELINES_JSON, "sent": {**BASELINES_JSON["sent"], "majority": _baseline_entry({"accuracy": 0.75})}}
    with pytest.raises(UserError, match="records no majority class for task 'sent'; re-run `gpt1 baselines`"):
        _run_ablation(tmp_path, ["sent", "sim"], [1], old)


def test_a_spread_is_rounded_once_from_its_unrounded_value(tmp_path):
    """A std of 0.9504 reads 1.0, in ablation.md and from ablation_std.csv alike: rounded to 0.95 first and then
    again, it would read 0.9 (0.95 is 0.9499... as a float)."""
    mean = pd.DataFrame({"avg": [59.13], "sent": [59.13]}, index=pd.Index(["full"], name="method"))
    std = pd.DataFrame({"avg": [0.9504], "sent": [0.9504]}, index=pd.Index(["full"], name="method"))
    assert "| Transformer w/ aux LM (full) | 59.1 ± 1.0 | 59.1 ± 1.0 |" in analysis.markdown_table(mean, METHODS, std)
    _write_summary({"full": {"sent": [0.5, 0.5 + 0.009504 * 2 ** 0.5], "sim": [0.6, 0.6]}}, tmp_path)
    _write_predictions(tmp_path / "finetune", {"full": {"sent": [0.9, 0.8], "sim": [0.9, 0.9]}})
    _run_ablation(tmp_path, ["sent", "sim"], [1, 2])
    written = pd.read_csv(tmp_path / "ablation_std.csv", index_col="method").loc["full", "sent"]
    assert written == pytest.approx(0.9504, abs=1e-6) and f"{written:.1f}" == "1.0"
    assert "± 1.0 |" in (tmp_path / "ablation.md").read_text()
