"""A run inside a SLURM job stops on its own shortly before the job's time limit, as if SLURM had signalled it."""

from __future__ import annotations

import datetime
import os
import signal
import time

import torch

from gpt1.train import interrupt
from gpt1.train.distributed import Runtime


def _fake_squeue(folder, end: str) -> None:
    script = folder / "squeue"
    script.write_text(f"#!/bin/sh\n[ \"$3\" = 4242 ] && echo '{end}'\n")
    script.chmod(0o755)


def test_a_slurm_jobs_run_stops_a_margin_before_its_limit_and_not_outside_slurm(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    runtime = Runtime(rank=0, world_size=1, local_rank=0, device=torch.device("cpu"))
    end = datetime.datetime.now().replace(microsecond=0) + datetime.timedelta(minutes=60)
    _fake_squeue(tmp_path, end.isoformat())
    with interrupt.StopRequest() as stop:
        assert stop.deadline == end.timestamp() - 120  # an hour's job stops two minutes before its limit
        assert not stop.requested(runtime)
        stop.deadline = time.time() - 1  # the deadline passed
        assert stop.requested(runtime) and stop.received == signal.SIGTERM
    assert interrupt.margin_seconds(60) == 15  # a one-minute job: a quarter of it
    _fake_squeue(tmp_path, "N/A")  # no limit
    assert interrupt.StopRequest().deadline is None
    monkeypatch.delenv("SLURM_JOB_ID")
    assert interrupt.slurm_job_end() is None
