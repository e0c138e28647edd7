"""One GPU per training job on a machine with several (gpt1/train/gpu_claim.py), on a CPU: torch is told it sees
three GPUs, and each "job" is a claim made as a fresh process would make it."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest
import torch

from gpt1.errors import UserError
from gpt1.train import distributed, gpu_claim, precision
from test_pretrain import subprocess_environment


@pytest.fixture
def three_gpus(monkeypatch, tmp_path):
    """Three visible GPUs, no launcher or scheduler, locks in a folder of this test; every claim starts afresh."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 3)
    monkeypatch.setattr(precision, "deterministic", lambda device: None)  # global CUDA settings: not in a test
    for name in ("LOCAL_RANK", "RANK", "WORLD_SIZE", "SLURM_JOB_ID", "CUDA_VISIBLE_DEVICES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(gpu_claim.LOCK_FOLDER_VARIABLE, str(tmp_path / "locks"))
    yield tmp_path / "locks"
    gpu_claim.release()


def _new_job(claims: list) -> torch.device:
    """A training job as a new process starts one: it holds nothing yet (the earlier jobs' locks stay held)."""
    claims.extend(gpu_claim._held)
    gpu_claim._held.clear()
    return precision.resolve_device("auto", key="finetune.device", claim=True)


def test_concurrent_jobs_each_claim_a_free_gpu_and_a_job_that_ends_gives_it_back(three_gpus):
    others: list = []
    assert [_new_job(others) for _ in range(3)] == [torch.device("cuda", index) for index in range(3)]
    assert sorted(path.name for path in three_gpus.iterdir()) == ["gpu-0.lock", "gpu-1.lock", "gpu-2.lock"]
    with pytest.raises(UserError, match=r"^all 3 GPUs of this machine are held by other gpt1 training jobs \(locks in "
                       r".*\); run at most 3 at once \(snakemake --resources gpu=3, dvc queue start --jobs 3\), or set "
                       r"finetune.device to cpu$"):
        _new_job(others)
    # A process claims once: fine-tuning resolves its device per task, and keeps the GPU it has.
    gpu_claim._held.append(others.pop(1))
    assert precision.resolve_device("cuda", claim=True) == torch.device("cuda", 1)
    others[0][1].close()  # the job on cuda:0 ends
    gpu_claim.release()   # and so does this one, on cuda:1
    assert _new_job(others) == torch.device("cuda", 0)
    for _, handle in others:
        handle.close()


def test_a_killed_job_leaves_no_claim_behind(three_gpus):
    claimer = ("import time\n"
               "from gpt1.train import gpu_claim\n"
               "print(gpu_claim.claim(3, 'finetune.device'), flush=True)\n"
               "time.sleep(120)\n")
    jobs = [subprocess.Popen([sys.executable, "-c", claimer], stdout=subprocess.PIPE, text=True,
                             env={**subprocess_environment(), gpu_claim.LOCK_FOLDER_VARIABLE: str(three_gpus)})
            for _ in range(2)]
    try:
        claimed = [int(job.stdout.readline()) for job in jobs]
        assert sorted(claimed) == [0, 1]  # each its own
        assert precision.resolve_device("cuda", claim=True) == torch.device("cuda", 2)
        gpu_claim.release()
        jobs[0].send_signal(signal.SIGKILL)
        jobs[0].wait(timeout=30)
        assert precision.resolve_device("cuda", claim=True) == torch.device("cuda", claimed[0])  # the killed job's
    finally:
        for job in jobs:
            job.kill()
            job.wait(timeout=30)


def test_jobs_given_their_devices_keep_them(three_gpus, monkeypatch):
    """torchrun's processes (LOCAL_RANK) and SLURM jobs (which SLURM gives their GPUs) claim nothing; neither do
    stages that do not train, nor a machine with one GPU."""
    monkeypatch.setenv("LOCAL_RANK", "2")
    monkeypatch.setenv("RANK", "2")
    monkeypatch.setattr(torch.cuda, "set_device", lambda device: None)
    assert distributed.start("cuda").device == torch.device("cuda", 2)
    monkeypatch.delenv("LOCAL_RANK")
    monkeypatch.delenv("RANK")
    monkeypatch.setenv("SLURM_JOB_ID", "7")
    assert distributed.start("cuda").device == torch.device("cuda", 0)
    monkeypatch.delenv("SLURM_JOB_ID")
    assert precision.resolve_device("cuda", key="finetune.device") == torch.device("cuda", 0)  # zero-shot
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert precision.resolve_device("cuda", claim=True) == torch.device("cuda", 0)
    assert not three_gpus.exists()  # no lock was taken
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 3)
    assert distributed.start("cuda").device == torch.device("cuda", 0) and (three_gpus / "gpu-0.lock").is_file()


def test_jobs_that_see_other_subsets_lock_the_same_gpu_by_the_same_name(three_gpus, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "5,6,7")
    assert precision.resolve_device("cuda", claim=True) == torch.device("cuda", 0)
    assert [path.name for path in three_gpus.iterdir()] == ["gpu-5.lock"]
