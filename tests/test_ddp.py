"""Distributed = single: two gloo processes under torchrun and one process with the same global batch end
with the same weights (a reproducer got 53 % instead of 86 % from a multi-GPU batching bug)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import warnings

import pytest
import torch

from gpt1.model.lm import build_model
from test_pretrain import ROOT, run_in_subprocess, runner_command, state_dict, subprocess_environment, \
    tiny_raw_params, write_tokens

# Dropout off: every process draws its own masks, so only the dropout-free arithmetic can agree.
# Global batch 8 sequences per update: one process accumulates 4 micro-batches of 2; under torchrun each of
# the 2 processes accumulates 2 micro-batches of 2, then gradients are all-reduced. The micro-batches are
# the same, so only the order of summing gradients differs: float rounding, nothing more.
STEPS = 8
# glibc's abort on a corrupted heap ("malloc(): unaligned tcache chunk detected", "free(): ...", "double free or
# corruption"), once in each of the two processes, and the launcher's report of both deaths by SIGABRT: what a
# compiled two-process run showed once (see its test).
HEAP_ABORT = re.compile(r"^(malloc|free|realloc)\(\): |double free or corruption", re.MULTILINE)
BOTH_ABORTED = "2 of 2 training processes failed (exit codes [-6])"


def raw_params(micro_batch_size: int) -> dict:
    raw = tiny_raw_params(micro_batch_size=micro_batch_size, tokens_per_update=128, max_steps=STEPS,
                          warmup_steps=2, eval_interval=4, checkpoints=2, save_interval=100)
    raw["model"]["dropout"] = raw["model"]["attn_dropout"] = 0.0
    raw["pretrain"]["dtype"] = "float32"  # bf16 rounding would swamp the summation-order differences checked here
    return raw


@pytest.mark.slow
def test_two_processes_end_with_the_weights_of_one(tmp_path):
    write_tokens(tmp_path / "tokens")
    single = run_in_subprocess(tmp_path, raw_params(micro_batch_size=2), "single")

    argv, folder = runner_command(tmp_path, raw_params(micro_batch_size=2), "ddp")
    done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                           *argv], capture_output=True, text=True, env=subprocess_environment(), cwd=ROOT,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    ddp = json.loads(done.stdout.split("RESULT ", 1)[1].splitlines()[0])
    assert ddp["world_size"] == 2 and single["world_size"] == 1

    ours, reference = state_dict(folder / "out" / "model.safetensors"), state_dict(
        tmp_path / "single" / "out" / "model.safetensors")
    torch.manual_seed(raw_params(2)["seed"])
    initial = build_model("transformer", {"vocab_size": 40, "n_positions": 16, "n_layer": 2, "n_head": 2,
                                         "d_model": 32, "d_ff": 64}).state_dict()
    moved = max((reference[name] - initial[name]).abs().max().item() for name in reference)
    assert moved > 1e-2  # training changed the weights far more than the tolerance below
    # Tight, yet above float noise: the key part of c_attn.bias has a gradient of pure rounding error (softmax
    # ignores a shift shared by all keys), which Adam scales up to lr-sized steps; it differs by ~3e-6 here.
    for name, tensor in reference.items():
        torch.testing.assert_close(ours[name], tensor, rtol=1e-4, atol=1e-5, msg=name)
    assert abs(ddp["val_loss"] - single["val_loss"]) < 1e-5
    # Only rank 0 wrote: one metrics history, one row per update.
    rows = (folder / "metrics" / "plots" / "metrics" / "train" / "loss.tsv").read_text().splitlines()
    assert len(rows) == 1 + STEPS


@pytest.mark.slow
def test_the_pretrain_command_launches_its_own_processes_through_torchrun(tmp_path):
    """pretrain.processes_per_node: 2 makes `gpt1 pretrain` start two processes under torchrun's launcher (the
    same command DVC, Snakemake and a SLURM job run); they end with the one-process weights, and one log holds both
    the launch and rank 0's training."""
    from test_resume import cli_project, run_cli

    raw = raw_params(micro_batch_size=2)
    single = cli_project(tmp_path, "single", raw)
    assert run_cli(single, "pretrain", "--kind", "transformer").returncode == 0
    raw["pretrain"]["processes_per_node"] = 2
    launched = cli_project(tmp_path, "launched", raw)
    done = run_cli(launched, "pretrain", "--kind", "transformer")
    assert done.returncode == 0, done.stderr[-3000:]

    log = (launched / "logs/pretrain/transformer.log").read_text()
    assert "starting 2 processes on this node through torchrun" in log
    assert "2 process(es) x 2 micro-batch(es) of 2" in log
    metrics = json.loads((launched / "results/pretrain/transformer/metrics.json").read_text())
    assert metrics["world_size"] == 2
    reference = state_dict(single / "data/pretrain/transformer/model.safetensors")
    for name, tensor in state_dict(launched / "data/pretrain/transformer/model.safetensors").items():
        torch.testing.assert_close(tensor, reference[name], rtol=1e-4, atol=1e-5, msg=name)


def test_auto_starts_one_process_per_gpu_the_job_is_given(monkeypatch):
    from gpt1.train.launch import process_count

    for name in ("SLURM_GPUS_ON_NODE", "SLURM_GPUS_PER_NODE", "CUDA_VISIBLE_DEVICES"):
        monkeypatch.delenv(name, raising=False)
    assert process_count("auto", "auto") == 1  # this machine: no GPU
    assert process_count(3, "cpu") == 3  # a number is taken as given (gloo processes on a CPU)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    assert process_count("auto", "auto") == 2
    monkeypatch.setenv("SLURM_GPUS_ON_NODE", "4")  # SLURM's allocation wins
    assert process_count("auto", "cuda") == 4
    monkeypatch.setenv("SLURM_GPUS_ON_NODE", "h100:8")
    assert process_count("auto", "auto") == 8
    assert process_count("auto", "cpu") == 1  # GPUs, but the params say CPU


@pytest.mark.slow
def test_a_compiled_model_under_ddp_trains_to_the_eager_weights(tmp_path):
    """pretrain.compile: true (torch.compile of the DDP-wrapped model, the fused LM loss inside) on two gloo
    processes ends with the eager one-process weights within float tolerance: compilation changes the kernels'
    summation order, never the arithmetic."""
    from test_resume import cli_project, run_cli

    raw = raw_params(micro_batch_size=2)
    eager = cli_project(tmp_path, "eager", raw)
    assert run_cli(eager, "pretrain", "--kind", "transformer").returncode == 0
    raw["pretrain"].update(processes_per_node=2, compile=True)
    compiled = cli_project(tmp_path, "compiled", raw)
    done = run_cli(compiled, "pretrain", "--kind", "transformer")
    first_try = ""
    if done.returncode != 0 and len(HEAP_ABORT.findall(done.stderr)) >= 2 and BOTH_ABORTED in done.stderr:
        # Rarely, both processes abort inside torch's first compilation with glibc's heap message; no run under
        # glibc's malloc checks reproduced it, and the training code is torch's there. One fresh try in a new
        # project; a second abort, or any other failure, fails the test, and shows the first try's end too.
        warnings.warn(f"compiled DDP run aborted ({HEAP_ABORT.search(done.stderr).group(0)}); one fresh try")
        first_try = "first try:\n" + done.stderr[-1500:] + "\nsecond try:\n"
        compiled = cli_project(tmp_path, "compiled-again", raw)
        done = run_cli(compiled, "pretrain", "--kind", "transformer")
    assert done.returncode == 0, first_try + done.stderr[-3000:]
    assert "training through torch.compile (of the DDP-wrapped model)" in (compiled / "logs/pretrain/transformer.log").read_text()
    reference = state_dict(eager / "data/pretrain/transformer/model.safetensors")
    for name, tensor in state_dict(compiled / "data/pretrain/transformer/model.safetensors").items():
        torch.testing.assert_close(tensor, reference[name], rtol=1e-4, atol=1e-5, msg=name)
