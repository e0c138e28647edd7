"""Schedules over updates: the paper's two learning-rate multipliers (0-based), which both warm up linearly
with the first update already moving (TF's Adam spent its first update at lr 0; nothing needs that)."""

from __future__ import annotations

import math


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
