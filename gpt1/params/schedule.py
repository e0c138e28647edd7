"""Pretraining's schedule for one model kind, resolved once from params' `pretrain` section: how many updates, the
warm-up, when the validation loss is measured and the resume state saved, and which checkpoints are kept.

Pretraining trains by it; the params checks, the transfer curve, its figure and the zero-shot analysis read the
same object, so a schedule rule (e.g. a kind's own max_steps) is written here only. The stages that use it list
this module as a dependency: a change to a rule re-runs them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PretrainSchedule:
    kind: str  # a model kind of gpt1/kinds.py
    updates: int  # 0: the imported weights as they are, trained no further
    warmup_updates: int
    eval_interval: int  # the validation loss every this many updates, and after the last
    save_interval: int  # the resume state every this many updates
    kept_checkpoints: tuple[int, ...]  # the updates after which a checkpoint is kept, log-spaced, the last included

    @classmethod
    def of(cls, pretrain, kind: str) -> "PretrainSchedule":
        """`pretrain`: params' section. A kind trains its own `pretrain.<kind>.max_steps` where set, else
        pretrain.max_steps; it keeps `pretrain.checkpoints` log-spaced checkpoints."""
        updates = getattr(pretrain, kind).max_steps or pretrain.max_steps
        return cls(kind, updates, pretrain.warmup_steps, pretrain.eval_interval, pretrain.save_interval,
                   tuple(log_spaced_updates(updates, pretrain.checkpoints)))

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
