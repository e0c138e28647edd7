"""Fine-tuning never loses work: a job stopped by SIGTERM (a SLURM time limit, a pre-emption) saves the seed in
progress and exits 143; the retry copies the finished seeds back (DVC deleted the job's outputs meanwhile), resumes
the stopped one at its saved update, and ends with the files of a run that was never stopped, byte for byte. A
changed param never reuses the saved work."""

from __future__ import annotations

import logging
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from finetune_project import finetune_project, run_finetune
from gpt1 import layout
from gpt1.params.schema import parse_params
from gpt1.methods import resolve
from gpt1.train import finetune
from gpt1.train.seed_state import FINISHED_RECORD, RESUME_FILE
from test_finetune import one_thread, tiny_params, tokens_of, workspace  # noqa: F401 (fixtures)
from test_pretrain import subprocess_environment


def _files(folder: Path) -> dict[str, bytes]:
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def test_a_job_stopped_by_sigterm_resumes_to_the_files_of_an_uninterrupted_run(tmp_path):
    settings = dict(tasks=("rt_polarity",), epochs=3, save_interval=1)  # 18 updates a seed; a state after each
    uninterrupted = finetune_project(tmp_path / "uninterrupted", **settings)
    done = run_finetune(uninterrupted)
    assert done.returncode == 0, done.stderr[-2000:]

    project = finetune_project(tmp_path / "stopped", **settings)
    state = project / layout.training_state(layout.finetune_runs("rt_polarity", "full"))
    in_progress = state / "seed2" / RESUME_FILE  # the second seed: the first one is done
    process = subprocess.Popen([sys.executable, "-m", "gpt1.cli", "finetune", "--method", "full", "--task",
                                "rt_polarity"], cwd=project,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=subprocess_environment())
    deadline = time.monotonic() + 120
    while not in_progress.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.002)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 143, stderr[-2000:]
    saved = torch.load(in_progress, map_location="cpu", weights_only=True)
    assert 1 <= saved["step"] < 18 and saved["position"] == saved["step"]
    assert f"stopped by SIGTERM after update {saved['step']} of 18" in stderr.splitlines()[-1]
    assert (state / "seed1" / FINISHED_RECORD).is_file()

    shutil.rmtree(project / "results" / "finetune" / "full" / "rt_polarity")  # as DVC does before it runs the job again
    done = run_finetune(project)
    assert done.returncode == 0, done.stderr[-2000:]
    log = (project / "logs" / "finetune" / "full" / "rt_polarity.log").read_text()
    assert log.count("its files are copied back, not trained again") == 1  # seed 1
    assert f"finetune rt_polarity/full/seed2: resuming from {in_progress.relative_to(project)} at update " \
           f"{saved['step']}" in log
    ours, reference = _files(project / "results"), _files(uninterrupted / "results")
    assert sorted(ours) == sorted(reference) and "finetune/full/rt_polarity/seed1/model.safetensors" in ours
    assert [name for name in reference if ours[name] != reference[name]] == []
    assert not state.exists()  # the job is done: its state is gone


class Crash(Exception):
    pass


def _crash_on_write(monkeypatch, count: int) -> None:
    """The job dies while writing its `count`-th seed (after the earlier ones finished)."""
    write, calls = finetune.write_run, [0]

    def crashing(*args, **kwargs):
        calls[0] += 1
        if calls[0] == count:
            raise Crash()
        write(*args, **kwargs)

    monkeypatch.setattr(finetune, "write_run", crashing)


def _run_seeds(workspace: Path, out: Path, state: Path | None, **settings) -> None:
    params = tiny_params(**settings)
    finetune.run_seeds(finetune.FinetuneSettings.of(params), tokens_of(params, "rt_polarity", workspace / "tasks",
                                                               workspace / "bpe"),
                       resolve("full", params), [1, 2], pretrain_dir=workspace / "pretrain", out_root=out,
                       state_root=state, keep_weights_of=[1])


def test_a_finished_seed_is_reused_only_with_the_settings_it_was_made_with(workspace, tmp_path, monkeypatch, caplog):
    caplog.set_level(logging.INFO, logger="gpt1.train.finetune")
    reference, other_rate = tmp_path / "reference", tmp_path / "other_rate"
    _run_seeds(workspace, reference, None)
    _run_seeds(workspace, other_rate, None, lr=5e-4)

    out, state = tmp_path / "out", tmp_path / "state"
    with monkeypatch.context() as patch:
        _crash_on_write(patch, 2)
        with pytest.raises(Crash):
            _run_seeds(workspace, out, state)
    assert (state / "seed1" / FINISHED_RECORD).is_file() and not (out / "seed2").exists()
    shutil.rmtree(out)

    caplog.clear()
    with monkeypatch.context() as patch:  # another learning rate: seed 1's kept files are stale
        _crash_on_write(patch, 2)
        with pytest.raises(Crash):
            _run_seeds(workspace, out, state, lr=5e-4)
    assert "not trained again" not in caplog.text
    assert _files(out / "seed1") == _files(other_rate / "seed1")

    shutil.rmtree(out)
    caplog.clear()
    _run_seeds(workspace, out, state, lr=5e-4)  # the settings seed 1 was finished with now: kept, not retrained
    assert caplog.text.count("not trained again") == 1
    assert _files(out) == _files(other_rate)
    assert _files(out) != _files(reference)
