"""Which device and which precision a stage runs in: the settings `device` (auto, cpu, cuda) and `dtype`
(auto, float32, bfloat16) resolved in one place and announced in one log line (`announce`); bf16 autocast
where the hardware runs bf16 natively.

Shared by pretraining, fine-tuning, zero-shot evaluation and the benchmark. Weights and optimiser state stay fp32 either way;
losses are computed in fp32 (gpt1.model.lm_loss, heads.task_loss).
"""

from __future__ import annotations

import contextlib
import logging
import os

import torch

from gpt1.errors import UserError
from gpt1.train import gpu_claim

log = logging.getLogger(__name__)


def native_bf16(device: torch.device) -> bool:
    """CUDA, or a CPU with bf16 instructions (AVX512-BF16 or AMX), where bf16 matmuls outrun fp32's."""
    if device.type == "cuda":
        return True
    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(getattr(torch.cpu, name, lambda: False)() for name in checks)


def uses_bf16(device: torch.device, dtype_setting: str) -> bool:
    """`bfloat16`, or `auto` where the hardware has native bf16; `float32` never."""
    return dtype_setting == "bfloat16" or (dtype_setting == "auto" and native_bf16(device))


def autocast(device: torch.device, dtype_setting: str, many_shapes: bool = False) -> contextlib.AbstractContextManager:
    """bf16 autocast or nothing (fp32). `many_shapes`: batches come in many shapes (fine-tuning, evaluation), and on
    CUDA attention then leaves out cuDNN's kernel, which builds an execution plan for every new shape (in bf16,
    where PyTorch may prefer it, fine-tuning then spends more on plans than on steps); flash and memory-efficient
    attention compute the same function without that cost."""
    if not uses_bf16(device, dtype_setting):
        return contextlib.nullcontext()
    chosen = torch.autocast(device_type=device.type, dtype=torch.bfloat16)
    if not (many_shapes and device.type == "cuda"):
        return chosen
    return _WithoutCudnnAttention(chosen)


class _WithoutCudnnAttention(contextlib.AbstractContextManager):
    """An autocast context that also keeps attention off cuDNN's kernel; entered afresh each time (a training loop
    enters one such object once per update)."""

    def __init__(self, autocast_context: contextlib.AbstractContextManager):
        self.autocast_context = autocast_context
        self.entered: list[contextlib.ExitStack] = []

    def __enter__(self):
        from torch.nn.attention import SDPBackend, sdpa_kernel

        stack = contextlib.ExitStack()
        stack.enter_context(sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]))
        stack.enter_context(self.autocast_context)
        self.entered.append(stack)
        return self

    def __exit__(self, *exception):
        return self.entered.pop().__exit__(*exception)


def describe(device: torch.device, dtype_setting: str) -> str:
    return "bf16 autocast" if uses_bf16(device, dtype_setting) else "fp32"


def announce(device: torch.device, dtype_setting: str, device_setting: str, key: str = "device") -> dict[str, str]:
    """Log one line saying where a stage runs, in which precision, and why there (`device_setting` is the
    params entry `key` that `resolve_device` turned into `device`); returns {"device", "precision", "reason"}
    for a caller to keep with its metrics. A CPU chosen by `auto` is otherwise silent, and a CPU-only torch
    installed by mistake would cost hours unnoticed."""
    name = f"{device} ({torch.cuda.get_device_name(device)})" if device.type == "cuda" else str(device)
    chosen = {"device": name, "precision": describe(device, dtype_setting),
              "reason": _device_reason(device, device_setting, key)}
    log.info("running on %s in %s: %s", chosen["device"], chosen["precision"], chosen["reason"])
    return chosen


def _device_reason(device: torch.device, device_setting: str, key: str) -> str:
    if device_setting != "auto":
        return f"{key} is {device_setting}"
    if device.type == "cuda":
        return f"{key} is auto and a CUDA device is visible"
    if torch.version.cuda is None:
        return f"{key} is auto and no CUDA device is visible (torch built without CUDA)"
    return f"{key} is auto and no CUDA device is visible (torch built with CUDA {torch.version.cuda})"


def resolve_device(setting: str, local_rank: int | None = None, key: str = "device", claim: bool = False) -> torch.device:
    """The one place a device setting ("auto", "cpu", "cuda") becomes a device; `key` names the params
    entry in messages. `local_rank`: the GPU a launcher gave this process (torchrun's LOCAL_RANK). Without one, a
    training job (`claim`) on a machine with several GPUs takes a free one (gpt1/train/gpu_claim.py), so that jobs
    run side by side each get their own; anything else takes cuda:0."""
    if setting not in ("auto", "cpu", "cuda"):
        raise UserError(f"{key} is {setting!r}; use auto, cpu or cuda")
    if setting == "cpu" or (setting == "auto" and not torch.cuda.is_available()):
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise UserError(f"{key} is 'cuda' but no CUDA device is visible; use 'auto' or 'cpu'")
    count = torch.cuda.device_count()
    if local_rank is None:
        local_rank = gpu_claim.claim(count, key) if claim and count > 1 and not gpu_claim.given_devices() else 0
    if local_rank >= count:
        raise UserError(f"LOCAL_RANK {local_rank} but only {count} CUDA device(s); "
                        "start at most one process per GPU (torchrun --nproc_per_node)")
    device = torch.device("cuda", local_rank)
    deterministic(device)
    return device


def deterministic(device: torch.device) -> None:
    """Ask CUDA for deterministic kernels (cuBLAS with a fixed workspace, no cuDNN autotuning), so a rerun on the
    same GPU type repeats wherever every kernel it uses has a deterministic implementation. Not all do: the
    backward of SDPA's flash and memory-efficient attention may not, and such kernels warn instead of stopping
    the run (warn_only). So a CUDA run is repeatable only within a tolerance, not bit for bit; CPU runs are
    deterministic without this (resume-equals-uninterrupted is checked bit for bit there). cuBLAS needs its
    workspace setting before its first handle exists, hence here, before any model reaches the GPU."""
    if device.type != "cuda":
        return
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True, warn_only=True)
    # That mode also fills every fresh allocation with NaN (or the largest integer), a pass over memory per
    # `torch.empty`, so that a read of uninitialised memory shows. Our code writes every buffer it allocates
    # uninitialised before reading it (the fused LM loss's gradient buffers, for one), so the fill changes no
    # result and only costs time.
    torch.utils.deterministic.fill_uninitialized_memory = False
    torch.backends.cudnn.benchmark = False
