"""Pretraining's schedule for one model kind, resolved once from params' `pretrain` section: how many updates, the
warm-up, when the validation loss is measured and the resume state saved, and which checkpoints are kept.

Pretraining trains by it; the params checks, the transfer curve, its figure and the zero-shot analysis read the
same object, so a schedule rule (e.g. a kind's own max_steps) is written here only. The stages that use it list
this module as a dependency: a change to a rule re-runs them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any


@dataclass(frozen=True)
class PretrainSchedule:
    """Each figure is read from params when asked for, so a stage that asks only for `updates` reads (and declares)
    only the keys that set it."""
    pretrain: Any  # params' `pretrain` section
    kind: str  # a model kind of gpt1/kinds.py

    @classmethod
    def of(cls, pretrain, kind: str) -> "PretrainSchedule":
        return cls(pretrain, kind)

    @property
    def updates(self) -> int:
        """A kind trains its own `pretrain.<kind>.max_steps` where set, else pretrain.max_steps; 0: the imported
        weights as they are, trained no further."""
        return getattr(self.pretrain, self.kind).max_steps or self.pretrain.max_steps

    @property
    def warmup_updates(self) -> int:
        return self.pretrain.warmup_steps

    @property
    def eval_interval(self) -> int:
        """The validation loss every this many updates, and after the last."""
        return self.pretrain.eval_interval

    @property
    def save_interval(self) -> int:
        """The resume state every this many updates."""
        return self.pretrain.save_interval

    @cached_property  # pretraining asks after every update
    def kept_checkpoints(self) -> tuple[int, ...]:
        """The updates after which a checkpoint is kept: `pretrain.checkpoints` log-spaced, the last included."""
        return tuple(log_spaced_updates(self.updates, self.pretrain.checkpoints))

    @property
    def transfer_points(self) -> tuple[int, ...]:
        """The kept checkpoints a fine-tuning can start from besides the finished model (the transfer curve's steps)."""
        return self.kept_checkpoints[:-1]


def log_spaced_updates(updates: int, count: int) -> list[int]:
    """`count` log-spaced update numbers from 1 to `updates` (fewer when rounding makes them collide)."""
    import numpy as np  # late: the params checks import this module

    if updates == 0:
        return []
    if count == 1:
        return [updates]
    return sorted({int(round(step)) for step in np.geomspace(1, updates, count)} | {updates})
