"""Training FLOPs per token and model FLOP utilisation: the yardstick GPU runs are reported with (the
pretraining log and `gpt1 benchmark`), and the peaks it is taken against: a known GPU's data-sheet figure,
or a CPU's own measured matmul."""

from __future__ import annotations

import re
from dataclasses import dataclass

H100_BF16_DENSE_FLOPS = 989e12


def flops_per_token(num_parameters: int, n_layer: int, d_model: int, sequence_length: int) -> float:
    """Training FLOPs per token: 6 N for the weights (forward 2 N, backward 4 N) plus attention scores and
    their weighted sum, 12 L d T (PaLM appendix B; the formula llm.c and nanoGPT report MFU with)."""
    return 6.0 * num_parameters + 12.0 * n_layer * d_model * sequence_length


def model_flops_utilisation(tokens_per_second: float, flops_per_token_: float,
                            peak_flops: float = H100_BF16_DENSE_FLOPS) -> float:
    """Achieved model FLOP/s as a fraction of the device's peak (0.41 = 41 %); `peak_flops` defaults to the
    H100's dense bf16, the yardstick the pretraining log reports."""
    return tokens_per_second * flops_per_token_ / peak_flops


@dataclass(frozen=True)
class Peak:
    """The FLOP rate MFU is taken against: what it is (named in reports) and how many FLOP/s."""
    name: str
    flops: float


# Dense (no structured sparsity) peaks from NVIDIA's data sheets, FLOP/s, by the precision the matmuls run in:
# bf16 autocast, tf32 (fp32 with TF32 tensor cores allowed, as the benchmark does on CUDA) or plain fp32.
_H100_SXM = {"bf16": 989e12, "tf32": 494.5e12, "fp32": 67e12}
_H100_PCIE = {"bf16": 756.5e12, "tf32": 378e12, "fp32": 51e12}
_A100 = {"bf16": 312e12, "tf32": 156e12, "fp32": 19.5e12}  # SXM and PCIe alike
# (pattern on torch.cuda.get_device_name(), board, peaks); the first match wins. The NVL boards (other clocks
# and peaks) match none, so they get no peak rather than a wrong one.
KNOWN_GPUS = (
    (re.compile(r"H100.*PCIE", re.IGNORECASE), "NVIDIA H100 PCIe", _H100_PCIE),
    (re.compile(r"H100(?!.*(NVL|PCIE))", re.IGNORECASE), "NVIDIA H100 SXM", _H100_SXM),
    (re.compile(r"H200(?!.*NVL)", re.IGNORECASE), "NVIDIA H200 SXM", _H100_SXM),  # the H100 SXM's compute
    (re.compile(r"A100", re.IGNORECASE), "NVIDIA A100", _A100),
)


def gpu_peak(device_name: str, precision: str) -> Peak | None:
    """The data-sheet peak of the GPU `device_name` (as torch.cuda.get_device_name says it) at `precision`
    (bf16, tf32, fp32); None for a GPU not in KNOWN_GPUS: no MFU is better than one against a guessed peak."""
    for pattern, board, peaks in KNOWN_GPUS:
        if pattern.search(device_name):
            return Peak(f"{board} dense {precision}", peaks[precision])
    return None


def measured_peak(size: int, flops: float, precision: str) -> Peak:
    """A CPU has no data-sheet figure that its kernels reach: its peak is its own square matmul, measured at
    the precision the model runs in (gpt1.commands.benchmark.matmul_throughput)."""
    return Peak(f"this machine's measured {size}³ {precision} matmul", flops)
