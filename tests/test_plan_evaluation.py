"""`gpt1 plan`'s evaluation (gpt1/commands/plan_evaluation.py): encode_task's jobs and the analyses, from the
evaluation measurement, against arithmetic written out here."""

from __future__ import annotations

import json

import pytest

from gpt1.commands import plan_evaluation
from gpt1.commands.plan import plan
from gpt1.commands.plan_report import evaluation_lines
from gpt1.params.schema import load_params
from tiny import ROOT


def measurement(tmp_path):
    path = tmp_path / "evaluation.json"
    path.write_text(json.dumps({
        "encode": {"big": {"rows": {"train": 400_000, "dev": 1, "test": 1}, "seconds": 400.0,
                           "bytes_per_training_row": 10_000},
                   "slow": {"rows": {"train": 100_000, "dev": 1, "test": 1}, "seconds": 200.0,
                            "bytes_per_training_row": 8_000},
                   "wall_s": 600.0, "peak_rss_gb": 4.0},
        "analysis": {"table_5_intervals_s": 60.0, "majority_checks_s": 30.0, "tables_2_4_s": 6.0, "compare_s": 24.0,
                     "runs": 120, "peak_rss_gb": 0.3}}))
    return path


def test_encode_takes_the_slower_rate_and_the_larger_memory_per_row(tmp_path):
    rates = plan_evaluation.read_rates(measurement(tmp_path))
    assert rates.seconds_per_example == pytest.approx(200.0 / 100_000)  # the slower task's
    assert rates.gb_per_example == pytest.approx(10_000 / 1e9)  # big's bytes per training row, the larger
    params = load_params(ROOT / "params.yaml", [ROOT / "profiles" / "tiny.yaml"])
    figures = plan_evaluation.evaluation_figures(params, {"a": 900_000, "b": 100_000, "c": 100_000}, 4, rates)
    assert figures["encode_core_hours"] == pytest.approx(1_100_000 * 0.002 / 3600)
    # the longest job (1,800 s) outlasts the work spread over 4 cores (550 s)
    assert figures["encode_wall_hours"] == pytest.approx(1_800 / 3600) and figures["encode_longest"] == "a"
    assert figures["encode_peak_gb"] == pytest.approx(9.0)
    runs = len(params.data.scored_tasks) * len(params.finetune.methods) * len(params.finetune.seeds)
    assert figures["analysis_runs"] == runs
    assert figures["analysis_hours"] == pytest.approx(120.0 * runs / 120 / 3600)
    spread = plan_evaluation.evaluation_figures(params, {"a": 100_000, "b": 100_000, "c": 100_000}, 1, rates)
    assert spread["encode_wall_hours"] == pytest.approx(600 / 3600)  # one core: every job in turn


def test_no_measurement_counts_nothing_and_says_so(tmp_path):
    assert plan_evaluation.read_rates(tmp_path / "missing.json") is None
    [line] = evaluation_lines({"evaluation": None, "cores": 2})
    assert line.startswith("Evaluation on CPUs: not counted: no measured rates")


def test_the_paper_plan_counts_evaluation_from_the_measurement(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    params = load_params(ROOT / "params.yaml", [ROOT / "profiles" / "paper.yaml"])
    figures = plan(params, cores=2)
    found, rates = figures["evaluation"], plan_evaluation.read_rates()
    examples = {row["task"]: row["examples"] for row in figures["finetuning"] if row["method"] == "full"}
    assert found["encode_core_hours"] == pytest.approx(sum(examples.values()) * rates.seconds_per_example / 3600)
    assert found["analysis_runs"] == 13 * 4 * len(params.finetune.seeds)  # the measurement's own size
    assert found["analysis_hours"] == pytest.approx(rates.analysis_seconds / 3600)
