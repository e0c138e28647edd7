"""What pretraining and fine-tuning share: the optimiser, the training state, one update, and the state's
round trip through a resume file.

Both follow the paper's recipe: AdamW with decoupled weight decay on >= 2-D weights only (the "modified L2"),
a learning-rate multiplier per update (`LambdaLR`), the global gradient norm clipped before each step.

The state is everything a run needs to continue as if it had never stopped: model, optimiser, schedule,
update count, data position, the metric history, and (captured at saving time) every process's random
number generators. It is saved in one place (`save_state`) and read back in one place (`load_state`);
a resume file written with other training settings (its `signature` differs) is ignored, not mixed in.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import torch

from gpt1.files.atomic import atomic_path
from gpt1.errors import UserError
from gpt1.train import distributed

log = logging.getLogger(__name__)


def build_optimizer(parameter_groups: list[dict], lr: float, betas: Sequence[float], eps: float) -> torch.optim.AdamW:
    """AdamW over groups that carry their own weight decay (`parameter_groups` of the models)."""
    return torch.optim.AdamW(parameter_groups, lr=lr, betas=tuple(betas), eps=eps,
                             fused=True)  # one kernel, CUDA and CPU alike


class Diverged(UserError):
    """A non-finite loss or gradient norm: the update was not applied, and the run must stop."""


@dataclass
class TrainingState:
    model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    step: int = 0                  # updates done
    position: int = 0              # how far into its data order the run is (pretraining: sequences consumed)
    history: list[dict[str, Any]] = field(default_factory=list)
    # For the one line a diverging run stops with: which run, and the settings that usually cause it.
    label: str = "training"
    knobs: str = "the learning rate"

    @classmethod
    def start(cls, model: torch.nn.Module, parameter_groups: list[dict], lr: float, betas: Sequence[float],
              eps: float, lr_factor: Callable[[int], float], label: str = "training",
              knobs: str = "the learning rate") -> "TrainingState":
        """A fresh state: `lr_factor(update)` multiplies `lr` at each update (0-based)."""
        optimizer = build_optimizer(parameter_groups, lr, betas, eps)
        return cls(model, optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, lr_factor), label=label,
                   knobs=knobs)

    @property
    def learning_rate(self) -> float:
        """The rate the next update uses."""
        return self.scheduler.get_last_lr()[0]

    def update(self, micro_batches: Sequence[Callable[[], Sequence[torch.Tensor]]], grad_clip: float,
               no_sync: Callable[[], contextlib.AbstractContextManager] | None = None,
               autocast: contextlib.AbstractContextManager | None = None) -> tuple[torch.Tensor, float]:
        """One optimiser update whose gradient is the mean over `micro_batches`. Each is called (under
        `autocast`) to compute its losses; the first is back-propagated, all are averaged and returned
        detached, with the gradient norm before clipping. `no_sync` (DDP) skips the gradient all-reduce on
        every micro-batch but the last."""
        count = len(micro_batches)
        sums = None
        for index, compute in enumerate(micro_batches):
            last = index == count - 1
            with no_sync() if no_sync is not None and not last else contextlib.nullcontext():
                with autocast if autocast is not None else contextlib.nullcontext():
                    losses = compute()
                (losses[0] / count).backward()
            detached = torch.stack([loss.detach().float() for loss in losses])
            sums = detached if sums is None else sums + detached
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), grad_clip)
        self._stop_if_diverged(sums / count, grad_norm)
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.step += 1
        return sums / count, grad_norm.item()

    def _stop_if_diverged(self, losses: torch.Tensor, grad_norm: torch.Tensor) -> None:
        """Checked before the step, so the weights, the optimiser and every saved state stay the last good ones."""
        if bool(torch.isfinite(losses).all()) and bool(torch.isfinite(grad_norm)):
            return
        self.optimizer.zero_grad(set_to_none=True)
        raise Diverged(f"{self.label}: training diverged at update {self.step + 1} (loss {losses[0].item():g}, "
                       f"gradient norm {grad_norm.item():g}); nothing of this run was published. Lower {self.knobs} "
                       "and run it again")

    def restore(self, saved: dict[str, Any], runtime: distributed.Runtime) -> None:
        """Continue from `saved` (a `load_state` result): weights, optimiser moments, schedule, counters and,
        when it was written by as many processes as run now, this process's random number generators."""
        self.model.load_state_dict(saved["model"])
        self.optimizer.load_state_dict(saved["optimizer"])
        self.scheduler.load_state_dict(saved["scheduler"])
        self.step, self.position, self.history = saved["step"], saved["position"], saved["history"]
        if len(saved["rng"]) == runtime.world_size:
            distributed.restore_rng(saved["rng"][runtime.rank])
        else:
            log.warning("resume state was written by %d process(es), this run has %d: dropout masks will not "
                        "match an uninterrupted run", len(saved["rng"]), runtime.world_size)


def save_state(state: TrainingState, path: Path, signature: str, runtime: distributed.Runtime,
               extra: dict[str, Any] | None = None) -> None:
    """Replace `path` atomically with the state and every rank's RNG states (a collective: call on all ranks);
    `extra`: what else the loop needs to continue (tensors and plain values), saved under "extra"."""
    rng = distributed.all_gather_objects(distributed.capture_rng(), runtime)
    if not runtime.is_main:
        return
    saved = {"signature": signature, "step": state.step, "position": state.position, "history": state.history,
             "model": state.model.state_dict(), "optimizer": state.optimizer.state_dict(),
             "scheduler": state.scheduler.state_dict(), "rng": rng}
    if extra is not None:
        saved["extra"] = extra
    with atomic_path(path) as temporary:
        torch.save(saved, temporary)


def load_state(path: Path, signature: str) -> tuple[dict[str, Any] | None, str]:
    """(the saved state at `path`, "resumable") when it exists and was written with the same `signature`; else
    (None, why): "absent", "foreign" (written with other training settings) or "unreadable" (truncated or not a
    state: renamed aside by `set_aside`, never deleted). An I/O error stops the run and leaves the file alone."""
    if not path.is_file():
        return None, "absent"
    try:
        saved = torch.load(path, map_location="cpu", weights_only=True)
    except OSError as error:  # a passing fault (a network file system, a full disk) must not cost the run
        raise UserError(f"could not read the resume state {path} ({error}); it is kept as it is: fix the cause "
                        "and run again") from None
    except (RuntimeError, EOFError, pickle.UnpicklingError, ValueError) as error:  # truncated, or not a state
        aside = set_aside(path)
        log.warning("resume state %s is unreadable (%s); kept as %s, starting from scratch", path, error, aside)
        return None, "unreadable"
    if not isinstance(saved, dict) or saved.get("signature") != signature:
        log.warning("%s was written with other training settings; starting from scratch", path)
        return None, "foreign"
    return saved, "resumable"


def set_aside(path: Path) -> Path | None:
    """Rename `path` to `<name>.unreadable-<time>` beside it (kept for a person to look at); None if absent."""
    if not path.exists():
        return None
    stamp = time.strftime("%Y%m%d-%H%M%S")
    aside = path.with_name(f"{path.name}.unreadable-{stamp}")
    count = 1
    while aside.exists():  # never replace what an earlier fault set aside
        count += 1
        aside = path.with_name(f"{path.name}.unreadable-{stamp}-{count}")
    os.replace(path, aside)
    return aside
