"""Metrics per task, the baselines, and the evaluate stage's tables."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.metrics import accuracy_score, f1_score, matthews_corrcoef

from gpt1 import layout
from gpt1.eval import baselines
from gpt1.stages import baselines as baselines_stage
from gpt1.stages import evaluate
from gpt1.errors import UserError
from gpt1.eval.metrics import score
from gpt1.data.records import ClassificationExample, SimilarityExample, TaskSpec, write_examples
from gpt1.data.task_data import Samples, load_task_data
from test_finetune import SPECS, TASKS, tiny_params, write_task

MRPC = TaskSpec("mrpc", "similarity", ("not_paraphrase", "paraphrase"), ("f1", "accuracy"), "test")
COLA = TaskSpec("cola", "classification", ("unacceptable", "acceptable"), ("matthews",), "test")


def test_accuracy_f1_of_the_positive_class_and_matthews():
    gold, predicted = [1, 1, 0, 0, 1, 0], [1, 0, 0, 1, 1, 1]
    scores = score(MRPC, gold, predicted)
    assert scores.values == {"f1": round(f1_score(gold, predicted, pos_label=1), 6), "accuracy": 0.5}
    assert scores.values["f1"] != round(f1_score(gold, predicted, pos_label=0), 6)  # really the positive class
    assert score(COLA, gold, predicted).values == {"matthews": round(matthews_corrcoef(gold, predicted), 6)}


def test_accuracy_matches_scikit_learns_on_random_labels():
    rng = np.random.default_rng(0)
    gold, predicted = rng.integers(0, 3, 997), rng.integers(0, 3, 997)
    spec = TaskSpec("x", "classification", ("a", "b", "c"), ("accuracy",), "test")
    assert score(spec, gold.tolist(), predicted.tolist()).values["accuracy"] == round(accuracy_score(gold, predicted), 6)


def test_f1_and_matthews_are_scikit_learns_exactly_on_every_row():
    """Computed from confusion counts for all rows at once (the bootstrap's resamples), bit for bit the values
    scikit-learn gives each row: binary F1 of label 1 for two labels, macro F1 over the labels present otherwise."""
    from gpt1.eval.metrics import metric_values

    rng = np.random.default_rng(2)
    for classes in (2, 3):
        gold, predicted = rng.integers(0, classes, (50, 40)), rng.integers(0, classes, (50, 40))
        predicted[0] = 0  # one label predicted only: Matthews is undefined (0), F1 of the rest 0
        gold[1, :] = predicted[1, :] = 1  # one label in all: macro F1 over it alone
        average = "binary" if classes == 2 else "macro"
        assert metric_values("f1", gold, predicted, classes).tolist() == [
            f1_score(g, p, average=average, zero_division=0) for g, p in zip(gold, predicted)]
        assert metric_values("matthews", gold, predicted, classes).tolist() == [
            matthews_corrcoef(g, p) for g, p in zip(gold, predicted)]


def test_a_fine_tuning_process_does_not_import_scipy_or_sklearn_up_front():
    """58 fine-tuning processes each paid 1-2 s for them; they load when a metric needs them."""
    check = "import sys, gpt1.train.finetune; print(sorted(m for m in ('scipy.stats', 'sklearn') if m in sys.modules))"
    assert subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, check=True).stdout == "[]\n"


def test_pearson_and_spearman_and_their_undefined_case():
    gold, predicted = [0.1, 0.4, 0.35, 0.8], [0.2, 0.3, 0.5, 0.9]
    scores = score(SPECS["lee_similarity"], gold, predicted)
    assert scores.values["pearson"] == pytest.approx(stats.pearsonr(gold, predicted)[0], abs=1e-6)
    assert scores.values["spearman"] == pytest.approx(stats.spearmanr(gold, predicted)[0], abs=1e-6)
    assert scores.notes == ()
    constant = score(SPECS["lee_similarity"], gold, [0.5] * 4)
    assert constant.values == {"pearson": 0.0, "spearman": 0.0}
    assert len(constant.notes) == 2 and "undefined" in constant.notes[0]


def test_scoring_nothing_is_a_user_error():
    with pytest.raises(UserError, match="empty"):
        score(SPECS["rt_polarity"], [], [])


# --- baselines ----------------------------------------------------------------------------------------------

@pytest.fixture
def tasks_dir(tmp_path):
    for name, spec in SPECS.items():
        write_task(tmp_path / "tasks" / name, spec)
    return tmp_path / "tasks"


def test_majority_and_tfidf_baselines_on_a_separable_task(tmp_path):
    tasks = tmp_path / "tasks"
    write_task(tasks / "rt_polarity", SPECS["rt_polarity"])
    train = [ClassificationExample(f"bad awful {i}", 0) for i in range(7)] + [
        ClassificationExample(f"good great {i}", 1) for i in range(5)]
    write_examples(tasks / "rt_polarity" / "train.jsonl", train)
    write_examples(tasks / "rt_polarity" / "test.jsonl", [ClassificationExample("great good", 1),
                                                          ClassificationExample("awful bad", 0)])
    data = load_task_data(Samples.of(tiny_params()), "rt_polarity", tasks)
    results = baselines.task_baselines(data, seed=1)
    assert results["majority"]["test"] == {"accuracy": 0.5}  # always "negative", the larger class
    assert results["majority"]["label"] == 0  # recorded: Table 5's † mark compares with this same class
    assert results["tfidf_logreg"]["test"] == {"accuracy": 1.0}


def test_regression_and_multiple_choice_baselines(tasks_dir):
    params = tiny_params()
    similarity = baselines.task_baselines(load_task_data(Samples.of(params), "lee_similarity", tasks_dir), seed=1)
    assert set(similarity) == {"majority", "tfidf_cosine"}  # no text classifier for a regression target
    assert similarity["majority"]["test"] == {"pearson": 0.0, "spearman": 0.0}
    assert "label" not in similarity["majority"]  # a score has no majority class
    assert any("undefined" in note for note in similarity["majority"]["notes"])
    choice = baselines.task_baselines(load_task_data(Samples.of(params), "social_iqa", tasks_dir), seed=1)
    assert set(choice) == {"majority"} and 0 <= choice["majority"]["test"]["accuracy"] <= 1
    answers = [example.label for example in load_task_data(Samples.of(params), "social_iqa", tasks_dir).splits["train"]]
    assert choice["majority"]["label"] == max(sorted(set(answers)), key=answers.count)  # the most frequent answer


def test_tfidf_cosine_baseline_scores_word_overlap(tmp_path):
    tasks = tmp_path / "tasks"
    write_task(tasks / "lee_similarity", SPECS["lee_similarity"])
    train = [SimilarityExample(f"storm hits town {i}", f"flood in city {i}", 0.3) for i in range(6)]
    test = [SimilarityExample("storm hits town", "storm hits town", 1.0),  # identical: cosine 1
            SimilarityExample("storm hits town", "flood in city", 0.1),  # no shared word: cosine 0
            SimilarityExample("storm in town", "flood in town", 0.5)]
    write_examples(tasks / "lee_similarity" / "train.jsonl", train)
    write_examples(tasks / "lee_similarity" / "test.jsonl", test)
    data = load_task_data(Samples.of(tiny_params()), "lee_similarity", tasks)
    predicted = baselines.tfidf_cosine(data)(data.splits["test"])
    assert predicted[0] == pytest.approx(1.0) and predicted[1] == 0.0 and 0 < predicted[2] < 1
    result = baselines.task_baselines(data, seed=1)["tfidf_cosine"]["test"]
    assert result["pearson"] == round(stats.pearsonr([1.0, 0.1, 0.5], predicted)[0], 6)


def test_baselines_run_writes_every_task_deterministically(tasks_dir, tmp_path):
    out = tmp_path / "baselines.json"
    first = baselines_stage.run(tiny_params(), tasks_dir, out)
    text = out.read_text()
    baselines_stage.run(tiny_params(), tasks_dir, out)
    assert out.read_text() == text and list(json.loads(text)) == sorted(TASKS) and set(first) == set(TASKS)
    assert set(first["snli_100k"]) == {"majority", "tfidf_logreg"}


# --- evaluate -----------------------------------------------------------------------------------------------

def fake_results(results_dir, params, value=lambda task, method, seed: 0.5 + seed / 10):
    for task in params.data.tasks:
        for method in params.finetune.methods:
            for seed in params.finetune.seeds:
                path = layout.finetune_run(task, method, seed, results_dir) / "metrics.json"
                path.parent.mkdir(parents=True)
                metrics = {metric: value(task, method, seed) for metric in SPECS[task].metrics}
                path.write_text(json.dumps({"dev": metrics, "test": metrics}))


def test_evaluate_gathers_runs_and_baselines_into_three_tables(tasks_dir, tmp_path):
    params = tiny_params()  # 4 tasks, 4 methods, seeds 1 and 2
    results = tmp_path / "results"
    baselines_stage.run(params, tasks_dir, results / "baselines.json")
    fake_results(results, params)
    evaluate.run(params, results, tasks_dir)
    scores = pd.read_csv(results / "scores.csv")
    assert list(scores.columns) == ["task", "method", "seed", "metric", "value"]
    runs = scores[~scores.method.isin(baselines.BASELINES)]
    assert len(runs) == 2 * 4 * (1 + 1 + 2 + 1)  # seeds x methods x metrics summed over the tasks
    summary = pd.read_csv(results / "scores_summary.csv")
    full = summary[(summary.task == "rt_polarity") & (summary.method == "full")].iloc[0]
    assert (full["mean"], full["seeds"]) == (pytest.approx(0.65), 2)
    assert full["std"] == round(pd.Series([0.6, 0.7]).std(), 6)  # sample std, rounded as written
    per_seed = scores[(scores.task == "rt_polarity") & (scores.method == "full")].set_index("seed")["value"]
    assert per_seed.to_dict() == {1: pytest.approx(0.6), 2: pytest.approx(0.7)}  # each seed's score, in the table
    majority = summary[(summary.task == "lee_similarity") & (summary.method == "majority")]
    assert majority.set_index("metric").loc["pearson", "mean"] == 0.0
    assert "tfidf_logreg" in set(summary[summary.task == "snli_100k"].method)
    assert "tfidf_logreg" not in set(summary[summary.task == "social_iqa"].method)


def test_metrics_json_holds_only_the_headline_table5_averages_then_fulls_score_per_task(tasks_dir, tmp_path):
    """results/metrics.json is what `dvc exp show` declares as metrics: Table 5's average per method (over each
    task's first metric: lee_similarity's pearson, not spearman), then full's score per task, and nothing else
    (the baselines, the other metrics and each seed stay in scores.csv and scores_summary.csv)."""
    params = tiny_params()
    results = tmp_path / "results"
    baselines_stage.run(params, tasks_dir, results / "baselines.json")
    level = {"rt_polarity": 0.2, "snli_100k": 0.4, "lee_similarity": 0.6, "social_iqa": 0.8}
    fake_results(results, params, lambda task, method, seed: level[task] + 0.1 * (method == "full") + seed / 100)
    evaluate.run(params, results, tasks_dir)
    headline = json.loads((results / "metrics.json").read_text())
    assert list(headline) == ["average", "full"]
    assert list(headline["average"]) == list(params.finetune.methods)  # the methods, in Table 5's order
    assert headline["average"]["full"] == pytest.approx(0.5 + 0.1 + 0.015)
    assert headline["average"]["no_pretrain"] == pytest.approx(0.5 + 0.015)
    assert headline["full"] == {task: pytest.approx(level[task] + 0.1 + 0.015) for task in params.data.tasks}


def test_evaluate_names_a_run_whose_metrics_were_cut_short(tasks_dir, tmp_path):
    params = tiny_params()
    results = tmp_path / "results"
    baselines_stage.run(params, tasks_dir, results / "baselines.json")
    run = results / "finetune" / params.finetune.methods[0] / params.data.tasks[0] / f"seed{params.finetune.seeds[0]}"
    run.mkdir(parents=True)
    (run / "metrics.json").write_text('{"dev": {"accuracy": 0.5}, "te')
    with pytest.raises(UserError, match=r"seed\d+/metrics.json is not valid JSON \(.*\); run `gpt1 finetune --method "
                                        r"\S+ --task \S+` again$"):
        evaluate.run(params, results, tasks_dir)


def test_evaluate_names_a_missing_run(tasks_dir, tmp_path):
    params = tiny_params()
    results = tmp_path / "results"
    baselines_stage.run(params, tasks_dir, results / "baselines.json")
    # every seed, into the stage's folder: `--seed` would write a one-off run elsewhere (results/one-off)
    with pytest.raises(UserError, match=r"seed1/metrics.json not found; run `gpt1 finetune --method full --task \S+` "
                                        r"first$"):
        evaluate.run(params, results, tasks_dir)
