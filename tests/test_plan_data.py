"""`gpt1 plan`'s data stages and disk (gpt1/commands/plan_data.py): rates read from the scaling measurement, Amdahl's
law between core counts, and the disk each output takes, against arithmetic written out here."""

from __future__ import annotations

import json

import pytest

from gpt1.commands import plan_data
from gpt1.commands.plan import plan
from gpt1.errors import UserError
from gpt1.commands.plan_data import PowerLaw, StageRate, data_stage_rows, disk_rows, read_rates
from gpt1.params.schema import load_params
from tiny import ROOT


def fits(per_mb_one: float, per_mb_two: float) -> dict:
    """Measured fits: time 10 s + per_mb a MB; memory 0.01 x MB^0.5 GB on one core, 0.015 x MB^0.5 on two."""
    stage = lambda per_mb, memory: {  # noqa: E731
        "wall_s": {"k": 1.0, "k_largest": 1.0, "power_scale": 1.0, "fixed": 10.0, "per_mb": per_mb},
        "peak_total_rss_gb": {"k": 0.3, "k_largest": 0.5, "power_scale": memory, "fixed": 0.2, "per_mb": 0.001}}
    return {"fits": {"1": {name: stage(per_mb_one, 0.01) for name in plan_data.STAGES},
                     "2": {name: stage(per_mb_two, 0.015) for name in plan_data.STAGES}}}


def test_more_cores_divide_only_the_part_two_cores_halved(tmp_path):
    (tmp_path / "scale.json").write_text(json.dumps(fits(per_mb_one=1.0, per_mb_two=0.6)))
    rate = read_rates(tmp_path / "scale.json")["prepare"]
    # t1 = serial + parallel = 1.0, t2 = serial + parallel / 2 = 0.6: parallel 0.8, serial 0.2
    assert rate.per_mb(1) == pytest.approx(1.0) and rate.per_mb(2) == pytest.approx(0.6)
    assert rate.per_mb(8) == pytest.approx(0.2 + 0.8 / 8)
    [row] = [row for row in data_stage_rows(6_700_000_000, 8, {"prepare": rate})]
    assert row["hours"] == pytest.approx((10.0 + 6_700 * (0.2 + 0.1)) / 3600)
    # memory along the power law: one core's, and for each further core the worker the second core added
    assert row["peak_gb"] == pytest.approx(0.01 * 6_700 ** 0.5 + 7 * 0.005 * 6_700 ** 0.5)


def test_one_measured_core_count_is_used_as_it_is_and_no_file_counts_nothing(tmp_path):
    memory = PowerLaw(0.1, 1.0)
    assert StageRate(0.0, None, 0.5, None, memory).per_mb(16) == 0.5
    assert StageRate(0.0, 0.7, None, memory, None).per_mb(16) == 0.7
    assert StageRate(0.0, 0.7, None, memory, None).peak_gb(100, 16) == pytest.approx(10.0)
    assert read_rates(tmp_path / "missing.json") is None


def test_disk_counts_corpus_tokens_checkpoints_resume_state_and_the_dvc_copy():
    params = load_params(ROOT / "params.yaml", [ROOT / "profiles" / "tiny.yaml"])
    sizes = {"transformer": (1_000_000, 0.0)}
    rows = {row["what"]: row["gb"] for row in disk_rows(params, 2_000_000_000, 500_000_000, sizes)}
    kept = params.pretrain.checkpoints
    assert rows["prepared corpus (data/corpus)"] == pytest.approx(2.0)
    assert rows["tokens (data/tokens)"] == pytest.approx(1.0)  # 2 bytes a token
    checkpoints = next(gb for what, gb in rows.items() if what.startswith("transformer: final weights"))
    assert checkpoints == pytest.approx(1_000_000 * 4 * (kept + 1) / 1e9)
    assert rows["transformer: resume state (weights, Adam's moments)"] == pytest.approx(1_000_000 * 4 * 3 / 1e9)
    assert rows["DVC cache: a copy of every tracked output above"] == pytest.approx(2.0 + 1.0 + checkpoints)


def test_the_paper_plan_counts_the_data_stages_from_the_measurement(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    measured = json.loads(plan_data.MEASUREMENT.read_text())
    figures = plan(load_params(ROOT / "params.yaml", [ROOT / "profiles" / "paper.yaml"]), cores=2)
    rows = {row["stage"]: row for row in figures["data_stages"]}
    assert set(rows) == set(plan_data.STAGES)
    fit = measured["fits"]["2"]["bpe"]  # only 2 cores' times are needed here: with 1 core's too, Amdahl gives 2's
    megabytes = figures["corpus"]["bytes"] / 1e6
    assert rows["bpe"]["hours"] == pytest.approx((fit["wall_s"]["fixed"] + fit["wall_s"]["per_mb"] * megabytes) / 3600)
    assert [row["what"] for row in figures["disk"]][-1].startswith("DVC cache")


def test_no_cores_is_one_line_naming_the_option():
    params = load_params(ROOT / "params.yaml", [ROOT / "profiles" / "tiny.yaml"])
    with pytest.raises(UserError, match="--cores 0: give at least 1 core"):
        plan(params, cores=0)


def test_the_plan_sets_the_run_at_full_size_beside_the_fitted_lines(tmp_path):
    """The largest run of the full-size file, as the data lines quote it: its corpus, cores and CPU, the data half's
    minutes and the most memory a stage took."""
    from gpt1.commands.plan_report import data_lines

    run = {"size": "6.7GB", "size_mb": 6700.0, "cores": 2, "data_half_s": 2223.7,
           "stages": {"prepare": {"wall_s": 680.7, "peak_total_rss_gb": 1.4},
                      "bpe": {"wall_s": 759.0, "peak_total_rss_gb": 6.82}}}
    small = {**run, "size": "1GB", "size_mb": 1000.0, "data_half_s": 466.7}
    (tmp_path / "books1.json").write_text(json.dumps({"runs": [small, run], "machine": {"cpu": "AMD EPYC"}}))
    measured = plan_data.full_size_run(tmp_path / "books1.json")
    assert (measured.size_gb, measured.minutes, measured.peak_gb) == (6.7, pytest.approx(2223.7 / 60), 6.82)
    assert plan_data.full_size_run(tmp_path / "missing.json") is None
    (tmp_path / "before.json").write_text(json.dumps({"runs": [], "machine": {"cpu": "AMD EPYC"}}))
    assert plan_data.full_size_run(tmp_path / "before.json") is None  # no run yet: the plan goes on without it
    figures = {"cores": 2, "data_stages": [dict(stage="bpe", hours=0.27, peak_gb=7.69)], "data_stages_measured": True,
               "disk": [], "data_at_full_size": vars(measured)}
    assert ("Measured once at 6.7 GB on 2 cores of an AMD EPYC (docs/measurements/data-scale-books1.json): prepare, "
            "bpe and tokenize 37.1 min together, 6.82 GB at most.") in data_lines(figures)
