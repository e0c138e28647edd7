"""Dropout whose CPU masks are cheap: four 16-bit random numbers from each 64-bit draw.

On CPU, `F.dropout` draws one Bernoulli sample per element, which can cost more than the GELU, the
LayerNorms and the softmax together (the attention probabilities alone are batch x heads x T x T elements
per layer). Drawing int64 numbers and reading them as int16 gives the same mask from a quarter of the
generator calls (`tests/test_dropout.py` checks the rate; `gpt1 benchmark` times a step). An element is dropped when its 16-bit number falls below round(p * 65536) / 65536, so the rate is
p to within 1/131072 (0.1 -> 0.100006); survivors are scaled by 1 / (1 - that rate), which keeps the
expectation exact. The generator is torch's default one, so `torch.manual_seed` and saved RNG states
make runs repeatable as with `F.dropout`. CUDA keeps `F.dropout` (a fused kernel there).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

_LEVELS = 1 << 16


def dropout(x: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    if not training or p == 0.0:
        return x
    if x.device.type != "cpu":
        return F.dropout(x, p, training=True)
    if not 0.0 <= p < 1.0:
        raise ValueError(f"dropout probability {p} is outside [0, 1)")
    dropped_levels = round(p * _LEVELS)
    draws = torch.randint(-(1 << 63), (1 << 63) - 1, ((x.numel() + 3) // 4,), dtype=torch.int64, device=x.device)
    keep = draws.view(torch.int16)[: x.numel()].view(x.shape) >= dropped_levels - (1 << 15)
    scale = _LEVELS / (_LEVELS - dropped_levels)
    if x.dtype == torch.float32:
        # One multiplication by a scaled mask (the same bits as x * keep * scale, and one op in backward too).
        return x * keep.to(x.dtype).mul_(scale)
    return x * keep * scale  # bf16: a scaled bf16 mask would round the scale itself


class Dropout(nn.Module):
    """nn.Dropout with the cheap CPU masks above."""

    def __init__(self, p: float):
        super().__init__()
        self.p = p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return dropout(x, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"
