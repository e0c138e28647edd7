"""Never lose work: a pretraining run killed with SIGKILL resumes and ends exactly where an uninterrupted
run ends (same weights bit for bit, dropout included), from a resume.pt that loads with weights_only=True."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from gpt1.stages import pretrain
from gpt1.errors import UserError
from gpt1.train.loop import Diverged
from gpt1.train.pretrain import Trainer
from gpt1.params.schedule import log_spaced_updates
from gpt1.params.schema import parse_params
from test_pretrain import one_thread, run_in_subprocess, runner_command, state_dict, subprocess_environment, \
    tiny_raw_params, write_tokens  # noqa: F401 (one_thread: an autouse fixture)

# Dropout on, so that a resume which forgot the RNG states would end with other weights.
RAW = tiny_raw_params(max_steps=100, save_interval=5, eval_interval=25, checkpoints=5)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> tuple[dict, Path]:
    """RAW's run on write_tokens' corpus from start to end, once for every test that resumes to it: its result and
    its folder."""
    root = tmp_path_factory.mktemp("uninterrupted")
    write_tokens(root / "tokens")
    return run_in_subprocess(root, RAW, "uninterrupted"), root / "uninterrupted"


def kill_after_first_resume_checkpoint(tmp_path, name: str) -> dict:
    """Start a run, SIGKILL it as soon as resume.pt exists, return what it left behind."""
    argv, folder = runner_command(tmp_path, RAW, name)
    process = subprocess.Popen([sys.executable, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env=subprocess_environment())
    resume = folder / "out" / "resume.pt"
    deadline = time.monotonic() + 90
    while not resume.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    process.send_signal(signal.SIGKILL)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == -signal.SIGKILL, f"the run ended before it could be killed: {stderr[-2000:]}"
    return torch.load(resume, map_location="cpu", weights_only=True)


def test_killed_run_resumes_to_the_same_weights_as_an_uninterrupted_run(tmp_path, uninterrupted):
    write_tokens(tmp_path / "tokens")
    reference, reference_folder = uninterrupted

    state = kill_after_first_resume_checkpoint(tmp_path, "killed")
    out = tmp_path / "killed" / "out"
    assert 0 < state["step"] < RAW["pretrain"]["max_steps"]
    assert state["position"] == state["step"] * RAW["pretrain"]["tokens_per_update"] // 16
    assert {"model", "optimizer", "scheduler", "rng", "history"} <= set(state)
    assert set(state["rng"][0]) == {"torch", "cuda", "numpy", "python"}
    assert state["scheduler"]["last_epoch"] == state["step"]
    assert len(state["history"]) == state["step"]
    assert not (out / "model.safetensors").exists()
    assert (out / "resume-checkpoints" / "step_1.safetensors").is_file()

    resumed = run_in_subprocess(tmp_path, RAW, "killed")
    assert resumed["resumed_from_step"] >= state["step"] > 0
    assert resumed["val_loss"] == reference["val_loss"]
    final, expected = state_dict(out / "model.safetensors"), state_dict(reference_folder / "out" / "model.safetensors")
    assert final.keys() == expected.keys()
    for name, tensor in expected.items():
        assert torch.equal(final[name], tensor), name
    # The log-spaced checkpoints written before the kill survive into the final folder, byte for byte.
    reference_checkpoints = reference_folder / "out" / "checkpoints"
    checkpoints = sorted(path.name for path in (out / "checkpoints").iterdir())
    assert checkpoints == sorted(path.name for path in reference_checkpoints.iterdir())
    for checkpoint in checkpoints:
        assert (out / "checkpoints" / checkpoint).read_bytes() == (reference_checkpoints / checkpoint).read_bytes()
    assert not (out / "resume.pt").exists()
    # The metric curves cover the whole run once: replayed history plus the resumed updates.
    curve = Path("metrics") / "plots" / "metrics" / "train" / "loss.tsv"
    assert (tmp_path / "killed" / curve).read_text() == (reference_folder / curve).read_text()


class Crash(Exception):
    pass


def test_resume_state_from_other_settings_starts_over(tmp_path, monkeypatch):
    tokens = write_tokens(tmp_path / "tokens")
    out = tmp_path / "out"
    with monkeypatch.context() as patch:  # a run that dies just before publishing its outputs
        patch.setattr(Trainer, "_publish", lambda self: (_ for _ in ()).throw(Crash()))
        with pytest.raises(Crash):
            pretrain.run(parse_params(RAW), "transformer", tokens, out, tmp_path / "metrics")
    assert torch.load(out / "resume.pt", weights_only=True)["step"] == 95
    assert (out / "resume-checkpoints" / "step_100.safetensors").is_file()

    changed = json.loads(json.dumps(RAW))
    changed["pretrain"]["max_steps"] = 30  # another schedule: the old state must not be used
    result = pretrain.run(parse_params(changed), "transformer", tokens, out, tmp_path / "metrics")
    assert result["resumed_from_step"] == 0 and result["steps"] == 30
    # Only the new run's checkpoints: the dead run's staged ones (other steps) were dropped.
    names = {path.name for path in (out / "checkpoints").iterdir()}
    expected = log_spaced_updates(30, RAW["pretrain"]["checkpoints"])
    assert names == {f"step_{step}.safetensors" for step in expected}
    assert not (out / "resume.pt").exists() and not (out / "resume-checkpoints").exists()


def test_a_kill_while_publishing_leaves_nothing_that_breaks_the_next_run(tmp_path, monkeypatch):
    """SIGKILL inside atomic_directory leaves a `.checkpoints.*.tmp/` folder next to resume.pt; the re-run
    must clear it and finish (it used to call unlink() on the folder and crash on every re-run)."""
    tokens = write_tokens(tmp_path / "tokens")
    out = tmp_path / "out"
    with monkeypatch.context() as patch:
        patch.setattr(Trainer, "_publish", lambda self: (_ for _ in ()).throw(Crash()))
        with pytest.raises(Crash):
            pretrain.run(parse_params(RAW), "transformer", tokens, out, tmp_path / "metrics")
    half_published = out / ".checkpoints.k1ll3d.tmp"
    half_published.mkdir()
    (half_published / "step_1.safetensors").write_bytes(b"partial")
    (out / ".model.safetensors.k1ll3d.tmp").write_bytes(b"partial")

    result = pretrain.run(parse_params(RAW), "transformer", tokens, out, tmp_path / "metrics")
    assert result["resumed_from_step"] == 95 and result["steps"] == 100
    assert sorted(path.name for path in out.iterdir()) == ["checkpoints", "model.safetensors", "pretrain.lock"]


def crash_before_publishing(tokens: Path, out: Path, raw: dict, monkeypatch) -> None:
    with monkeypatch.context() as patch:
        patch.setattr(Trainer, "_publish", lambda self: (_ for _ in ()).throw(Crash()))
        with pytest.raises(Crash):
            pretrain.run(parse_params(raw), "transformer", tokens, out, out.parent / "metrics")


def test_another_checkpoint_schedule_does_not_resume_into_the_old_staged_steps(tmp_path, monkeypatch):
    tokens, out = write_tokens(tmp_path / "tokens"), tmp_path / "out"
    crash_before_publishing(tokens, out, RAW, monkeypatch)
    changed = json.loads(json.dumps(RAW))
    changed["pretrain"]["checkpoints"] = 3
    result = pretrain.run(parse_params(changed), "transformer", tokens, out, tmp_path / "metrics")
    assert result["resumed_from_step"] == 0
    names = {path.name for path in (out / "checkpoints").iterdir()}
    assert names == {f"step_{step}.safetensors" for step in log_spaced_updates(100, 3)}


def test_an_unreadable_resume_state_is_set_aside_with_its_checkpoints_never_deleted(tmp_path, monkeypatch):
    tokens, out = write_tokens(tmp_path / "tokens"), tmp_path / "out"
    crash_before_publishing(tokens, out, RAW, monkeypatch)
    complete = (out / "resume.pt").read_bytes()
    (out / "resume.pt").write_bytes(complete[:1000])  # torn by a fault outside our atomic writes
    staged = sorted(path.name for path in (out / "resume-checkpoints").iterdir())
    result = pretrain.run(parse_params(RAW), "transformer", tokens, out, tmp_path / "metrics")
    assert result["resumed_from_step"] == 0 and result["steps"] == 100
    (state_aside,) = out.glob("resume.pt.unreadable-*")
    (staging_aside,) = out.glob("resume-checkpoints.unreadable-*")
    assert state_aside.read_bytes() == complete[:1000]
    assert sorted(path.name for path in staging_aside.iterdir()) == staged


def test_a_diverging_run_stops_keeps_its_last_good_state_and_publishes_nothing(tmp_path, monkeypatch):
    tokens, out = write_tokens(tmp_path / "tokens"), tmp_path / "out"
    original = Trainer._micro_batches

    def poisoned(self):  # from update 13 on, the loss is NaN (as an absurd learning rate makes it)
        batches = original(self)
        if self.state.step < 12:
            return batches
        return [lambda compute=compute: tuple(loss * float("nan") for loss in compute()) for compute in batches]

    monkeypatch.setattr(Trainer, "_micro_batches", poisoned)
    with pytest.raises(Diverged, match=r"^pretrain transformer: training diverged at update 13 \(loss nan.*"
                       r"Lower pretrain.transformer.max_lr \(or pretrain.grad_clip\); the last saved state stays in"):
        pretrain.run(parse_params(RAW), "transformer", tokens, out, tmp_path / "metrics")
    assert torch.load(out / "resume.pt", weights_only=True)["step"] == 10  # save_interval 5: the last good one
    assert not (out / "model.safetensors").exists() and not (out / "checkpoints").exists()
    assert all(torch.isfinite(tensor).all() for tensor in
               torch.load(out / "resume.pt", weights_only=True)["model"].values())


def test_a_second_process_pretraining_into_the_same_folder_stops_with_one_line(tmp_path):
    write_tokens(tmp_path / "tokens")
    long_run = tiny_raw_params(max_steps=100_000, save_interval=5, eval_interval=1000, checkpoints=3)
    argv, folder = runner_command(tmp_path, long_run, "busy")
    first = subprocess.Popen([sys.executable, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env=subprocess_environment())
    try:
        deadline = time.monotonic() + 90
        while not (folder / "out" / "resume.pt").exists() and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert first.poll() is None, first.communicate()[1][-2000:]
        with pytest.raises(UserError, match=rf"pretraining into {folder / 'out'} is already running \(process "
                           rf"{first.pid} holds .*pretrain.lock\); wait for it"):
            pretrain.run(parse_params(long_run), "transformer", tmp_path / "tokens", folder / "out",
                         folder / "metrics")
        assert first.poll() is None  # the first run goes on, its staged checkpoints untouched
        assert (folder / "out" / "resume-checkpoints").is_dir()
    finally:
        first.kill()
        first.communicate(timeout=30)


FAULTS = """
import os, torch
from pathlib import Path
fault, when = os.environ["GPT1_FAULT"].split(":")
calls = [0]


def hit():
    calls[0] += 1
    if calls[0] == int(when):
        os._exit(137)  # as SIGKILL: no clean-up, no flushing


if fault == "update":  # gradients computed, not yet applied
    clip = torch.nn.utils.clip_grad_norm_
    torch.nn.utils.clip_grad_norm_ = lambda *args, **kwargs: (hit(), clip(*args, **kwargs))[1]
elif fault == "save":  # half of resume.pt's temporary file written
    save = torch.save

    def torn_save(state, path, *args, **kwargs):
        save(state, path, *args, **kwargs)
        if calls[0] + 1 == int(when):
            Path(path).write_bytes(Path(path).read_bytes()[: Path(path).stat().st_size // 2])
        hit()

    torch.save = torn_save
elif fault == "publish":  # some checkpoints linked into the temporary checkpoints/ folder
    import gpt1.train.pretrain as pretrain
    link = pretrain.link_or_copy
    pretrain.link_or_copy = lambda source, destination: (link(source, destination), hit())
"""


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["update:13", "save:2", "publish:2"])
def test_a_kill_at_any_point_resumes_to_the_uninterrupted_weights(tmp_path, fault, uninterrupted):
    write_tokens(tmp_path / "tokens")
    reference, reference_folder = uninterrupted
    argv, folder = runner_command(tmp_path, RAW, "faulty")
    runner = tmp_path / "faulty_runner.py"
    runner.write_text(FAULTS + Path(argv[0]).read_text())
    killed = subprocess.run([sys.executable, str(runner), *argv[1:]], capture_output=True, text=True,
                            env={**subprocess_environment(), "GPT1_FAULT": fault}, timeout=120)
    assert killed.returncode == 137, killed.stderr[-2000:]
    out = folder / "out"
    assert not (out / "model.safetensors").exists()

    resumed = run_in_subprocess(tmp_path, RAW, "faulty")
    assert resumed["val_loss"] == reference["val_loss"]
    final, expected = state_dict(out / "model.safetensors"), state_dict(reference_folder / "out" / "model.safetensors")
    assert all(torch.equal(final[name], tensor) for name, tensor in expected.items())
    assert sorted(path.name for path in out.iterdir()) == ["checkpoints", "model.safetensors", "pretrain.lock"]
    reference_checkpoints = reference_folder / "out" / "checkpoints"
    assert [(p.name, p.read_bytes()) for p in sorted((out / "checkpoints").iterdir())] == \
        [(p.name, p.read_bytes()) for p in sorted(reference_checkpoints.iterdir())]


def cli_project(tmp_path: Path, name: str, raw: dict) -> Path:
    """A project folder for `gpt1 pretrain` run as a user runs it: params.yaml and data/tokens."""
    import yaml

    project = tmp_path / name
    write_tokens(project / "data" / "tokens")
    (project / "params.yaml").write_text(yaml.safe_dump(raw))
    return project


def run_cli(project: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpt1.cli", *args], cwd=project, capture_output=True, text=True,
                          env=subprocess_environment(), timeout=300)


def test_sigterm_saves_the_resume_state_and_exits_to_be_retried_then_resumes_to_the_same_weights(tmp_path):
    """SLURM's time limit and pre-emption send SIGTERM (then SIGKILL): the run finishes its update, saves its state
    though no periodic save is due, exits with 143 so the job is retried, and the retry ends where an uninterrupted
    run ends, bit for bit."""
    raw = tiny_raw_params(max_steps=400, save_interval=10_000, eval_interval=100, checkpoints=5)
    uninterrupted = cli_project(tmp_path, "uninterrupted", raw)
    assert run_cli(uninterrupted, "pretrain", "--kind", "transformer").returncode == 0

    project = cli_project(tmp_path, "stopped", raw)
    out = project / "data" / "pretrain" / "transformer"
    process = subprocess.Popen([sys.executable, "-m", "gpt1.cli", "pretrain", "--kind", "transformer"], cwd=project,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=subprocess_environment())
    deadline = time.monotonic() + 120
    while not (out / "resume-checkpoints" / "step_1.safetensors").exists() and process.poll() is None \
            and time.monotonic() < deadline:
        time.sleep(0.005)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 143, stderr[-2000:]
    state = torch.load(out / "resume.pt", map_location="cpu", weights_only=True)
    assert 1 <= state["step"] < 400
    assert f"stopped by SIGTERM after update {state['step']} of 400" in stderr.splitlines()[-1]
    assert not (out / "model.safetensors").exists()

    assert run_cli(project, "pretrain", "--kind", "transformer").returncode == 0
    assert f"at update {state['step']}" in (project / "logs/pretrain/transformer.log").read_text()  # resumed there
    reference = state_dict(uninterrupted / "data/pretrain/transformer/model.safetensors")
    for name, tensor in state_dict(out / "model.safetensors").items():
        assert torch.equal(tensor, reference[name]), name
    assert not (out / "resume.pt").exists()
