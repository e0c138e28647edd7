"""A training run asked to stop (SIGTERM: a SLURM time limit, a pre-emption, `scancel`, a person's `kill`) finishes
the update in progress, saves its resume state and exits with a status that says it was stopped, so that the
scheduler (SLURM's requeue, Snakemake's retries) starts it again and it resumes at the saved update.

The signal only sets a flag; the loop acts on it between updates, where the state is whole. Under torchrun every
process is signalled (by SLURM or by the launcher); they agree on the update to stop after, since saving the
resume state is a collective.
"""

from __future__ import annotations

import logging
import signal
import threading

import torch

from gpt1.errors import UserError
from gpt1.train import distributed

log = logging.getLogger(__name__)
STOP_SIGNALS = (signal.SIGTERM,)


class Stopped(UserError):
    """A run stopped by a signal after saving its resume state: not finished, not failed for good."""

    exit_code = 128 + signal.SIGTERM  # what a shell reports for a process ended by SIGTERM: the job is retried


class StopRequest:
    """Notes a stop signal while installed (`with StopRequest() as stop:`) and tells the loop when to act on it."""

    def __init__(self):
        self.received: signal.Signals | None = None
        self._previous: dict[signal.Signals, object] = {}

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
        """Whether to stop now: on any process that got the signal, all stop at the same update."""
        if not runtime.distributed:
            return self.received is not None
        flag = torch.tensor([1.0 if self.received is not None else 0.0], device=runtime.device)
        return bool(distributed.all_reduce_sum(flag, runtime).item() > 0)

