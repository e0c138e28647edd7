"""Which device and which precision a stage runs in: the settings `device` (auto, cpu, cuda) and `dtype`
(auto, float32, bfloat16) resolved in one place; bf16 autocast where the hardware runs bf16 natively.

Shared by pretraining, fine-tuning, zero-shot evaluation and the benchmark. Weights and optimiser state stay fp32 either way;
losses are computed in fp32 (gpt1.model.lm_loss, heads.task_loss).
"""

from __future__ import annotations

import contextlib
import os

import torch

from gpt1.errors import UserError


def native_bf16(device: torch.device) -> bool:
    """CUDA, or a CPU with bf16 instructions (AVX512-BF16 or AMX), where bf16 matmuls are ~2x fp32."""
    if device.type == "cuda":
        return True
    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(getattr(torch.cpu, name, lambda: False)() for name in checks)


def uses_bf16(device: torch.device, dtype_setting: str) -> bool:
    """`bfloat16`, or `auto` where the hardware has native bf16; `float32` never."""
    return dtype_setting == "bfloat16" or (dtype_setting == "auto" and native_bf16(device))


def autocast(device: torch.device, dtype_setting: str) -> contextlib.AbstractContextManager:
    """bf16 autocast or nothing (fp32)."""
    if not uses_bf16(device, dtype_setting):
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16)


def describe(device: torch.device, dtype_setting: str) -> str:
    return "bf16 autocast" if uses_bf16(device, dtype_setting) else "fp32"


def resolve_device(setting: str, local_rank: int = 0, key: str = "device") -> torch.device:
    """The one place a device setting ("auto", "cpu", "cuda") becomes a device; `key` names the params
    entry in messages."""
    if setting not in ("auto", "cpu", "cuda"):
        raise UserError(f"{key} is {setting!r}; use auto, cpu or cuda")
    if setting == "cpu" or (setting == "auto" and not torch.cuda.is_available()):
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise UserError(f"{key} is 'cuda' but no CUDA device is visible; use 'auto' or 'cpu'")
    if local_rank >= torch.cuda.device_count():
        raise UserError(f"LOCAL_RANK {local_rank} but only {torch.cuda.device_count()} CUDA device(s); "
                        "start at most one process per GPU (torchrun --nproc_per_node)")
    device = torch.device("cuda", local_rank)
    deterministic(device)
    return device


def deterministic(device: torch.device) -> None:
    """Ask CUDA for deterministic kernels, so a rerun on the same GPU type gives the same weights. cuBLAS needs
    its workspace setting before its first handle exists, hence here, before any model reaches the GPU. Kernels
    without a deterministic version warn instead of stopping the run (warn_only); CPU runs are deterministic
    without this."""
    if device.type != "cuda":
        return
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cudnn.benchmark = False
