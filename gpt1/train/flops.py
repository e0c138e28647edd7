"""Training FLOPs per token and model FLOP utilisation: the yardstick GPU runs are reported with (the
pretraining log and `gpt1 benchmark`)."""

from __future__ import annotations

H100_BF16_DENSE_FLOPS = 989e12


def flops_per_token(num_parameters: int, n_layer: int, d_model: int, sequence_length: int) -> float:
    """Training FLOPs per token: 6 N for the weights (forward 2 N, backward 4 N) plus attention scores and
    their weighted sum, 12 L d T (PaLM appendix B; the formula llm.c and nanoGPT report MFU with)."""
    return 6.0 * num_parameters + 12.0 * n_layer * d_model * sequence_length


def model_flops_utilisation(tokens_per_second: float, flops_per_token_: float,
                            peak_flops: float = H100_BF16_DENSE_FLOPS) -> float:
    """Achieved model FLOP/s as a fraction of the device's peak (0.41 = 41 %)."""
    return tokens_per_second * flops_per_token_ / peak_flops
