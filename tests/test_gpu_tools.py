"""`make gpu-bundle` and `make gpu-check` (tools/): what the bundle carries, that the check never replaces data it did
not unpack, and that a failed or timed-out step still leaves a report with the others' figures. The whole check is
rehearsed on a CPU with `python3 tools/gpu_check.py --rehearsal` (docs/gpu.md), not here: it needs a bundle,
which downloads wheels and runs the data stages."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tarfile
from pathlib import Path

import pytest
from tool_modules import load_tool

ROOT = Path(__file__).resolve().parents[1]


gpu_bundle = load_tool("gpu_bundle")
gpu_check = load_tool("gpu_check")
gpu_report, gpu_steps = load_tool("gpu_report"), load_tool("gpu_steps")


def test_the_bundle_carries_every_locked_package_but_the_images_and_the_data_stages_with_its_hashes(tmp_path):
    lock = tmp_path / "lock.txt"
    lock.write_text("# header\nalpha==1.0 \\\n    --hash=sha256:aa \\\n    --hash=sha256:ab\n    # via x\n"
                    "numpy==2.0 \\\n    --hash=sha256:bb\nspacy==3.8 \\\n    --hash=sha256:cc\n"
                    "pydantic-core==2.5 \\\n    --hash=sha256:dd\n")
    carried = gpu_bundle.carried_packages(lock, image={"numpy"})
    assert list(carried) == ["alpha", "pydantic-core"]
    assert carried["alpha"] == "alpha==1.0 \\\n    --hash=sha256:aa \\\n    --hash=sha256:ab"
    # The real lock: what a GPU stage imports is carried, what the image or the data stages have is not.
    real = gpu_bundle.carried_packages(gpu_bundle.LOCK, gpu_bundle.package_names(gpu_bundle.IMAGE_PACKAGES))
    assert {"pydantic", "pydantic-core", "ftfy", "dvc", "dvclive", "snakemake"} <= set(real)
    assert not {"torch", "numpy", "transformers", "spacy", "mwparserfromhell"} & set(real)


def _bundle(tmp_path: Path, files: dict[str, str]) -> Path:
    bundle = tmp_path / "bundle"
    (bundle / "wheels").mkdir(parents=True)
    source = tmp_path / "source"
    for name, text in files.items():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_text(text)
    with tarfile.open(bundle / "data.tar.xz", "w:xz") as archive:
        archive.add(source / "data", arcname="data")
    manifest = {"made": "-", "commit": "-", "profile": "profiles/gpu.yaml", "python_version": "3.12",
                "data": {"file": "data.tar.xz", "folders": ["data/tokens"],
                         "sha256": gpu_check.sha256(bundle / "data.tar.xz")}, "wheels": {}}
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    return bundle


def test_the_data_is_unpacked_once_and_never_over_data_it_did_not_unpack(tmp_path, monkeypatch):
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.setattr(gpu_check, "ROOT", project)
    bundle = _bundle(tmp_path, {"data/tokens/meta.json": "{}"})
    check = gpu_check.Check(bundle, tmp_path / "report", rehearsal=True, budget_seconds=60)
    manifest = json.loads((bundle / "manifest.json").read_text())
    check.unpack_data(manifest)
    assert (project / "data/tokens/meta.json").read_text() == "{}"
    check.unpack_data(manifest)  # the same bundle again: nothing to do
    other = tmp_path / "other"
    (other / "data/tokens").mkdir(parents=True)
    (other / "data/tokens/mine.bin").write_text("a user's")
    monkeypatch.setattr(gpu_check, "ROOT", other)
    with pytest.raises(SystemExit, match="data/tokens exists and did not come from this bundle"):
        check.unpack_data(manifest)
    assert (other / "data/tokens/mine.bin").read_text() == "a user's"


def test_a_failing_and_a_timed_out_step_still_leave_the_report_of_the_others(tmp_path, monkeypatch):
    monkeypatch.setattr(gpu_check, "ROOT", tmp_path)
    check = gpu_check.Check(tmp_path / "bundle", tmp_path / "report", rehearsal=True, budget_seconds=60)
    assert check.run("passes", [sys.executable, "-c", "print('fine')"], limit=30)
    assert not check.run("fails", [sys.executable, "-c", "import sys; print('broken'); sys.exit(3)"], limit=30)
    assert not check.run("hangs", [sys.executable, "-c", "import time; time.sleep(60)"], limit=11)
    facts = json.loads((tmp_path / "report/report.json").read_text())
    steps = facts["steps"]
    assert steps["passes"]["status"] == "passed" and steps["fails"]["status"] == "failed (exit 3)"
    assert steps["hangs"]["status"] == "stopped at its limit of 11 s" and steps["hangs"]["seconds"] < 40
    report = (tmp_path / "report/report.md").read_text()
    assert "| passes | passed |" in report and "## fails: the end of its log" in report and "broken" in report
    check.deadline = 0  # the budget is spent: later steps are skipped, and say so
    assert not check.run("late", [sys.executable, "-c", "pass"], limit=30)
    assert json.loads((tmp_path / "report/report.json").read_text())["steps"]["late"]["status"].startswith("skipped")


def test_the_dev_sweep_chooses_the_rate_by_dev_scores_alone_and_table5_trains_with_it(tmp_path, monkeypatch):
    """Each candidate's runs report dev and test scores; the test scores favour another rate, which must not matter.
    The runs' weights are dropped, their scores kept, and the chosen rate is the profile Table 5 runs with."""
    monkeypatch.setattr(gpu_check, "ROOT", tmp_path)
    check = gpu_check.Check(tmp_path / "bundle", tmp_path / "report", rehearsal=True, budget_seconds=600)
    monkeypatch.setattr(check, "tasks", lambda: ["rt_polarity", "sts_b"])
    dev_by_rate = {2.5e-4: 0.60, 1.0e-4: 0.70, 5.0e-4: 0.50}
    commands = []

    def fake_run(name, command, limit):
        commands.append(command[-1])
        rate = next(rate for rate in dev_by_rate if f"lr_{rate:g}.yaml" in command[-1])
        for task in ("rt_polarity", "sts_b"):
            run = tmp_path / "results/one-off/finetune/full" / task / "seed1"
            run.mkdir(parents=True)
            (run / "metrics.json").write_text(json.dumps({"dev": {"accuracy": dev_by_rate[rate]},
                                                          "test": {"accuracy": 1.0 - dev_by_rate[rate]}}))
            (run / "model.safetensors").write_bytes(b"weights")
        return True

    monkeypatch.setattr(check, "run", fake_run)
    check.sweep()
    assert check.facts["sweep"]["chosen_lr"] == "0.0001"
    assert json.loads((tmp_path / "report/chosen.yaml").read_text()) == {"finetune": {"lr": 1.0e-04}}
    assert str(tmp_path / "report/chosen.yaml") in check.profiles()
    assert "--task rt_polarity --seed 1" in commands[0] and "--task sts_b --seed 1" in commands[0]
    assert not list((tmp_path / "report/sweep").rglob("*.safetensors"))
    assert len(list((tmp_path / "report/sweep").rglob("metrics.json"))) == 6
    assert not (tmp_path / "results/one-off/finetune").exists()
    assert "| 0.0001 (chosen) | 70.0 | 70.0 | 70.0 |" in gpu_report.render(check.facts)


def test_the_sweep_never_writes_over_one_off_runs_it_did_not_make(tmp_path, monkeypatch):
    monkeypatch.setattr(gpu_check, "ROOT", tmp_path)
    (tmp_path / "results/one-off/finetune").mkdir(parents=True)
    check = gpu_check.Check(tmp_path / "bundle", tmp_path / "report", rehearsal=True, budget_seconds=600)
    with pytest.raises(SystemExit, match="fresh clone"):
        check.sweep()


def test_the_report_carries_figure_2s_right_panel_and_its_computed_directions(tmp_path, monkeypatch):
    """Zero-shot runs on the GPU machine from the bundle's candidates: the check copies its figure and tables into the
    report, and report.md gives each heuristic's first and last score with the direction the trend table computed."""
    monkeypatch.setattr(gpu_check, "ROOT", tmp_path)
    (tmp_path / "results").mkdir()
    for name in ("zero_shot.png", "zero_shot.csv", "zero_shot_trend.csv"):
        shutil.copy(ROOT / "docs/results" / name, tmp_path / "results" / name)
    check = gpu_check.Check(tmp_path / "bundle", tmp_path / "report", rehearsal=True, budget_seconds=60)
    check.collect()
    assert {"zero_shot.png", "zero_shot.csv", "zero_shot_trend.csv"} <= {path.name for path in check.report.iterdir()}
    report = gpu_report.render(check.facts)
    assert "## Zero-shot over pretraining" in report
    assert "| transformer | social_iqa | 0.300 | 0.366 | +0.066 ± 0.041 | rises |" in report
    assert "| lstm | agreement | 0.573 | 0.397 | -0.176 ± 0.061 | falls |" in report
    assert "zeroshot" in gpu_check.GPU_RULES and "data/zero_shot" in gpu_bundle.DATA_FOLDERS


def test_the_science_window_adds_its_overlay_and_runs_the_headline_benchmark_alone(tmp_path, monkeypatch):
    monkeypatch.setattr(gpu_check, "ROOT", tmp_path)
    check = gpu_check.Check(tmp_path / "bundle", tmp_path / "report", rehearsal=False, budget_seconds=600, science=True)
    assert check.profiles() == [gpu_check.PROFILE, gpu_check.SCIENCE_OVERLAY]
    names = []
    monkeypatch.setattr(check, "run", lambda name, command, limit: names.append((name, command)) or True)
    check.benchmark(headline=True)
    assert [name for name, _ in names] == [f"benchmark_{name}" for name in gpu_steps.HEADLINE]
    assert "--compile" in names[0][1] and names[0][1].count("--batch") == 2  # the headline's 128 after the default's


def test_the_science_window_reports_the_gap_against_pretraining_tokens(tmp_path, monkeypatch):
    """The gap is computed by the package from the transfer curve's file and rendered with its extrapolation."""
    curve = tmp_path / "transfer_curve.csv"
    rows = ["task,metric,split,updates,tokens,mean,std,seeds"]
    for task, scores in {"a": [50, 54, 58], "b": [30, 32, 34]}.items():
        for (updates, tokens), mean in zip([(0, 0), (10, 1000), (100, 10000)], scores):
            rows += [f"{task},accuracy,test,{updates},{tokens},{mean},0,2", f"{task},accuracy,dev,{updates},{tokens},0,0,2"]
    curve.write_text("\n".join(rows) + "\n")
    environment = dict(os.environ, PYTHONPATH=str(ROOT))
    facts = gpu_steps.gap_facts(curve, environment)
    assert [point["gap"] for point in facts["points"]] == [3.0, 6.0]
    assert facts["tokens_for_target"] == pytest.approx(1e6)  # +3 a decade from +3 at 10^3: +12 at 10^6
    check = gpu_check.Check(tmp_path / "bundle", tmp_path / "report", rehearsal=True, budget_seconds=60, science=True)
    check.facts["gap"] = facts
    assert "| 100 | 10,000 | +6.0 |" in gpu_report.render(check.facts)
    assert gpu_steps.gap_facts(tmp_path / "missing.csv", environment)["status"].startswith("not measured")
