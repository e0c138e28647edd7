"""Schedules over updates: the paper's two learning-rate multipliers (0-based), which both warm up linearly
with the first update already moving (TF's Adam spent its first update at lr 0; nothing needs that), and the
log-spaced updates at which pretraining keeps a checkpoint. Plain arithmetic: params validation uses it too."""

from __future__ import annotations

import math

import numpy as np


def warmup_cosine(step: int, warmup_steps: int, max_steps: int) -> float:
    """Pretraining: linear warmup, then cosine annealing to 0 at max_steps."""
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    progress = (step - warmup_steps) / max(1, max_steps - warmup_steps)
    return 0.5 * (1.0 + math.cos(math.pi * min(progress, 1.0)))


def warmup_linear(step: int, total: int, warmup: int) -> float:
    """Fine-tuning: linear warmup over `warmup` updates, then linear decay to 0 at `total`."""
    if step < warmup:
        return (step + 1) / warmup
    return max(0.0, (total - step) / max(1, total - warmup))


def checkpoint_steps(max_steps: int, count: int) -> list[int]:
    """`count` log-spaced update numbers from 1 to max_steps (fewer when rounding makes them collide)."""
    if max_steps == 0:
        return []
    if count == 1:
        return [max_steps]
    return sorted({int(round(step)) for step in np.geomspace(1, max_steps, count)} | {max_steps})
