"""A training run asked to stop (SIGTERM: a SLURM time limit, a pre-emption, `scancel`, a person's `kill`) finishes
the update in progress, saves its resume state and exits with a status that says it was stopped, so that the
scheduler (SLURM's requeue, Snakemake's retries) starts it again and it resumes at the saved update.

The signal only sets a flag; the loop acts on it between updates, where the state is whole. Under torchrun every
process is signalled (by SLURM or by the launcher); they agree on the update to stop after, since saving the
resume state is a collective.

Inside a SLURM job the run also stops on its own shortly before the job's time limit: SLURM enforces a limit only
every half minute or so, and marks a job that ends past its limit TIMEOUT even when it succeeded, so a run that
finished in that gap would be retried from its start. Stopping first keeps every attempt's end inside the limit.
"""

from __future__ import annotations

import datetime
import logging
import os
import shutil
import signal
import subprocess
import threading
import time

import torch

from gpt1.errors import UserError
from gpt1.train import distributed

log = logging.getLogger(__name__)
STOP_SIGNALS = (signal.SIGTERM,)


class Stopped(UserError):
    """A run stopped by a signal after saving its resume state: not finished, not failed for good."""

    exit_code = 128 + signal.SIGTERM  # what a shell reports for a process ended by SIGTERM: the job is retried


def slurm_job_end() -> float | None:
    """The time (seconds since the epoch) this process's SLURM job reaches its time limit; None outside SLURM or
    where the job has none."""
    job, squeue = os.environ.get("SLURM_JOB_ID"), shutil.which("squeue")
    if not job or not squeue:
        return None
    try:
        shown = subprocess.run([squeue, "-h", "-j", job, "-o", "%e"], capture_output=True, text=True, timeout=30)
        return datetime.datetime.fromisoformat(shown.stdout.strip()).timestamp()
    except (OSError, subprocess.SubprocessError, ValueError):  # "N/A", "Unknown", no answer: no deadline to keep
        return None


def margin_seconds(limit_seconds: float) -> float:
    """How long before the limit to stop: a quarter of the job's time, at most two minutes (the resume state's
    save and the exit fit in it; SLURM's enforcement lags the limit by about half a minute)."""
    return min(120.0, limit_seconds / 4)


class StopRequest:
    """Notes a stop signal while installed (`with StopRequest() as stop:`) and tells the loop when to act on it:
    after a signal, or close to the SLURM job's time limit (see the module's docstring)."""

    def __init__(self):
        self.received: signal.Signals | None = None
        self._previous: dict[signal.Signals, object] = {}
        end = slurm_job_end()
        self.deadline = None if end is None else end - margin_seconds(max(0.0, end - time.time()))

    def __enter__(self) -> "StopRequest":
        if threading.current_thread() is threading.main_thread():  # Python delivers signals to the main thread only
            for number in STOP_SIGNALS:
                self._previous[number] = signal.signal(number, self._note)
        return self

    def __exit__(self, *exc) -> None:
        for number, handler in self._previous.items():
            signal.signal(number, handler)

    def _note(self, number: int, frame) -> None:
        self.received = signal.Signals(number)
        log.warning("%s received: stopping after the update in progress, with the resume state saved",
                    self.received.name)

    def requested(self, runtime: distributed.Runtime) -> bool:
        """Whether to stop now: on any process that got the signal or reached the deadline, all stop at the same
        update."""
        if self.received is None and self.deadline is not None and time.time() >= self.deadline:
            self.deadline = None
            self.received = signal.SIGTERM  # as if SLURM had sent it: the same save, exit status and retry
            log.warning("the SLURM job's time limit is near: stopping after the update in progress, with the resume "
                        "state saved")
        if not runtime.distributed:
            return self.received is not None
        flag = torch.tensor([1.0 if self.received is not None else 0.0], device=runtime.device)
        return bool(distributed.all_reduce_sum(flag, runtime).item() > 0)

