"""The paper's Tables 2-4 beside ours: every registered task has its paper result, the paper profile gets a row
per task and the GLUE mean, and the numbers are the runs' own."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gpt1 import layout
from gpt1.data import paper_tasks, registry
from gpt1.errors import UserError
from gpt1.eval.metrics import score
from gpt1.eval.paper_tables import is_stand_in
from gpt1.paper import COMPARED_WITH, GLUE_TASKS, PAPER_SCORES, TABLE_TITLES
from gpt1.params.files import read_yaml
from gpt1.stages.paper_tables import run_paper_tables

ROOT = Path(__file__).resolve().parent.parent
ROWS = 120


def _write_runs(results: Path, tasks_dir: Path, tasks: list[str], seeds: list[int], right: float = 0.7) -> None:
    """Per task: task.json from the registry, and per seed of `full` test predictions with `right` of them
    correct (a seed-dependent share) and the metrics.json the evaluation would write for them."""
    rng = np.random.default_rng(0)
    for task in tasks:
        spec = registry.TASKS[task].spec
        (tasks_dir / task).mkdir(parents=True)
        (tasks_dir / task / "task.json").write_text(spec.to_json())
        classes = len(spec.labels) if spec.labels else 3  # multiple choice without names: 3 candidates
        labels = rng.uniform(0, 5, ROWS).round(2) if spec.is_regression else np.arange(ROWS) % classes
        for seed in seeds:
            if spec.is_regression:
                predicted = labels + rng.normal(0, 1.0 + seed, ROWS)
            else:
                correct = rng.random(ROWS) < right - 0.05 * seed
                predicted = np.where(correct, labels, (labels + 1) % classes)
            folder = layout.finetune_run(task, "full", seed, results, spec.model_of)  # mnli_mm: inside mnli's
            folder.mkdir(parents=True)
            rows = [{"index": i, "label": float(g) if spec.is_regression else int(g),
                     "prediction": round(float(p), 6) if spec.is_regression else int(p)}
                    for i, (g, p) in enumerate(zip(labels, predicted))]
            folder.joinpath("predictions_test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
            values = score(spec, [r["label"] for r in rows], [r["prediction"] for r in rows]).values
            folder.joinpath("metrics.json").write_text(json.dumps({"dev": values, "test": values}))


def test_every_registered_task_stands_beside_a_paper_result_on_a_metric_it_reports():
    assert set(COMPARED_WITH) == set(registry.TASKS)
    for task, definition in registry.TASKS.items():
        assert PAPER_SCORES[COMPARED_WITH[task]].metric in definition.spec.metrics, task
    assert not any(is_stand_in(task) for task in paper_tasks.PAPER_TASKS)
    assert all(is_stand_in(task) for task in registry.TASKS if task not in paper_tasks.PAPER_TASKS)
    own = [COMPARED_WITH[task] for task in paper_tasks.PAPER_TASKS]
    assert len(own) == len(set(own))  # one paper task per task of the paper profile
    assert {score.table for score in PAPER_SCORES.values()} == set(TABLE_TITLES) and set(GLUE_TASKS) <= set(own)


def test_the_paper_profile_gets_a_row_per_task_and_the_glue_mean(tmp_path):
    tasks = registry.scored_tasks(read_yaml(ROOT / "profiles" / "paper.yaml")["data"]["tasks"])  # mnli brings mnli_mm
    seeds = [1, 2, 3]
    _write_runs(tmp_path / "results", tmp_path / "tasks", tasks, seeds)
    frame = run_paper_tables(tmp_path / "results", tmp_path / "tasks", tasks, seeds).set_index("task")

    assert sorted(frame.index) == sorted(tasks) and set(frame.relation) == {"paper task"}
    for task in tasks:
        row = frame.loc[task]
        paper = PAPER_SCORES[row.paper_task]
        assert (row.table, row.paper, row.metric) == (paper.table, paper.value, paper.metric)
        per_seed = [100 * json.loads((layout.finetune_run(task, "full", seed, tmp_path / "results",
                                                          registry.model_of(task)) / "metrics.json").read_text()
                                     )["test"][paper.metric] for seed in seeds]
        assert row["mean"] == pytest.approx(np.mean(per_seed)) and row["std"] == pytest.approx(np.std(per_seed, ddof=1))
        assert row.low <= row["mean"] + 1e-9 and row["mean"] <= row.high + 1e-9 and row.low < row.high
        assert row.difference == pytest.approx(row["mean"] - paper.value)
    written = pd.read_csv(tmp_path / "results" / "paper_tables.csv")
    assert list(written.table) == sorted(written.table)  # Table 2, then 3, then 4
    text = (tmp_path / "results" / "paper_tables.md").read_text()
    assert all(f"## {title}" in text for title in TABLE_TITLES.values())
    glue_mean = np.mean([frame.set_index("paper_task").loc[name, "mean"] for name in GLUE_TASKS])
    glue_row = "| GLUE (ours: the nine tasks' mean; the paper: leaderboard score) | 72.8 | all nine |"
    assert f"{glue_row} {glue_mean:.1f} |" in text and "|---|---|---|---|---|---|\n" in text
    assert "Not selected in this profile: RACE-m 62.9, RACE-h 57.4." in text


def test_stand_ins_are_labelled_and_unselected_paper_tasks_listed(tmp_path):
    tasks = read_yaml(ROOT / "params.yaml")["data"]["tasks"]
    _write_runs(tmp_path / "results", tmp_path / "tasks", tasks, [1, 2])
    frame = run_paper_tables(tmp_path / "results", tmp_path / "tasks", tasks, [1, 2])
    assert set(frame.relation) == {"stand-in"}
    text = (tmp_path / "results" / "paper_tables.md").read_text()
    assert "| SST-2 (accuracy) | 91.3 | rt_polarity (stand-in) |" in text
    assert "GLUE" not in text.split("## Table 4")[1].split("Not selected")[0]  # no GLUE mean from stand-ins
    assert "MNLI-m 82.1" in text


def test_perfect_predictions_give_a_closed_interval_at_100(tmp_path):
    _write_runs(tmp_path / "results", tmp_path / "tasks", ["rt_polarity"], [1], right=1.05)
    row = run_paper_tables(tmp_path / "results", tmp_path / "tasks", ["rt_polarity"], [1]).iloc[0]
    assert (row["mean"], row.low, row.high, row["std"]) == (100.0, 100.0, 100.0, 0.0)


def test_a_missing_run_is_one_clear_error(tmp_path):
    _write_runs(tmp_path / "results", tmp_path / "tasks", ["rt_polarity"], [1])
    with pytest.raises(UserError, match=r"seed2/metrics.json not found; run the finetune stage"):
        run_paper_tables(tmp_path / "results", tmp_path / "tasks", ["rt_polarity"], [1, 2])
    assert not (tmp_path / "results" / "paper_tables.csv").exists()


def _user_task(tasks_dir: Path, name: str) -> None:
    """A task of params' data.user_tasks as prepare writes it: its own name, no paper task it stands for."""
    spec = json.loads(registry.TASKS["rt_polarity"].spec.to_json()) | {"name": name, "stands_for": "",
                                                                        "source": f"data.user_tasks.{name}"}
    (tasks_dir / name).mkdir(parents=True)
    (tasks_dir / name / "task.json").write_text(json.dumps(spec))


def test_a_users_own_task_is_listed_apart_and_alone_gives_empty_tables(tmp_path):
    _write_runs(tmp_path / "results", tmp_path / "tasks", ["rt_polarity"], [1])
    _user_task(tmp_path / "tasks", "my_task")
    frame = run_paper_tables(tmp_path / "results", tmp_path / "tasks", ["rt_polarity", "my_task"], [1])
    assert list(frame.task) == ["rt_polarity"]
    text = (tmp_path / "results" / "paper_tables.md").read_text()
    assert text.endswith("## Your own tasks\n\nNo paper result to stand beside (their scores are in Table 5, "
                         "results/ablation.md): my_task.\n")

    frame = run_paper_tables(tmp_path / "results", tmp_path / "tasks", ["my_task"], [1])  # only the user's own
    assert frame.empty and list(pd.read_csv(tmp_path / "results" / "paper_tables.csv").columns)[:3] == [
        "table", "paper_task", "paper"]
    text = (tmp_path / "results" / "paper_tables.md").read_text()
    assert text.count("No selected task is, or stands in for, a task of this table.") == len(TABLE_TITLES)
