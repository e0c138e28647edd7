"""Where a training step's time goes: torch.profiler over a few steps, its device time split into matrix products,
attention, the optimizer (with gradient clipping), copies, and the rest (elementwise kernels and reductions: layer
norm, GELU, dropout, softmax, the loss), beside the step's wall time, whose remainder is the device waiting on the
host (launches, the data). On CUDA it sums the kernels' own time; on a CPU, each operator's self time. The wall time
is the caller's unprofiled step where given: recording every operator slows the host, so a profiled step's own
wall time would count that slowdown as the device waiting.

The split is by kernel name, which differs between cuBLAS, compiled (Triton) and eager kernels: the names matched
are in CATEGORIES, and every kernel not matched counts as the rest.
"""

from __future__ import annotations

import time
from typing import Callable

import torch
from torch.profiler import ProfilerActivity, profile

# (category, name fragments), first match wins; names are lower-cased. Matrix products: cuBLAS (gemm, Hopper's
# nvjet), CUTLASS, ATen's CPU operators. Attention: flash / memory-efficient / cuDNN attention and the CPU path.
CATEGORIES = (
    ("attention", ("flash", "fmha", "attention", "sdpa", "softmax_backward", "_efficient_attention")),
    ("matrix products", ("gemm", "nvjet", "cutlass", "xmma", "aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm",
                         "aten::linear", "aten::matmul")),
    ("optimizer", ("adam", "multi_tensor", "foreach", "clip_grad", "aten::norm", "_amp_foreach")),
    ("copies", ("memcpy", "memset", "aten::copy_", "aten::to", "aten::contiguous")),
)
OTHER = "elementwise and reductions"


def category(name: str) -> str:
    lowered = name.lower()
    for label, fragments in CATEGORIES:
        if any(fragment in lowered for fragment in fragments):
            return label
    return OTHER


def step_breakdown(step: Callable[[], None], device: torch.device, steps: int = 3,
                   step_seconds: float | None = None) -> dict:
    """Seconds per step in each category (plus `wall` and `device_idle`), and the ten costliest kernels.
    `step_seconds`: the step's time measured without the profiler (the wall time; else the profiled one)."""
    on_cuda = device.type == "cuda"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_cuda else [])
    if on_cuda:
        torch.cuda.synchronize()
    started = time.perf_counter()
    with profile(activities=activities) as profiler:
        for _ in range(steps):
            step()
        if on_cuda:
            torch.cuda.synchronize()
    profiled = (time.perf_counter() - started) / steps
    wall = step_seconds if step_seconds is not None else profiled
    totals: dict[str, float] = {label: 0.0 for label, _ in CATEGORIES} | {OTHER: 0.0}
    kernels: dict[str, float] = {}
    for event in profiler.key_averages():
        if on_cuda:
            if event.device_type != torch.autograd.DeviceType.CUDA:
                continue
            seconds = event.self_device_time_total / 1e6 / steps
        else:
            if event.key.startswith("ProfilerStep"):
                continue
            seconds = event.self_cpu_time_total / 1e6 / steps
        totals[category(event.key)] += seconds
        kernels[event.key] = kernels.get(event.key, 0.0) + seconds
    busy = sum(totals.values())
    return {"steps": steps, "wall_seconds": wall, "profiled_wall_seconds": profiled, "seconds": totals,
            "busy_seconds": busy,
            "device_idle_seconds": max(0.0, wall - busy) if on_cuda else None,
            "share_of_wall": {label: value / wall for label, value in totals.items()},
            "costliest": [{"name": name[:120], "seconds": seconds}
                          for name, seconds in sorted(kernels.items(), key=lambda item: -item[1])[:10]]}


def format_breakdown(breakdown: dict) -> str:
    wall = breakdown["wall_seconds"]
    parts = [f"{label} {seconds * 1e3:.1f} ms ({seconds / wall:.0%})" for label, seconds in breakdown["seconds"].items()]
    idle = breakdown["device_idle_seconds"]
    if idle is not None:
        parts.append(f"device idle {idle * 1e3:.1f} ms ({idle / wall:.0%})")
    return f"step {wall * 1e3:.1f} ms: " + ", ".join(parts)
