"""The cheap-mask CPU dropout behaves as dropout: rate, scale, gradient, repeatability, eval."""

import pytest
import torch

from gpt1.model.dropout import Dropout, dropout


def test_drops_at_the_requested_rate_and_keeps_the_expectation():
    torch.manual_seed(0)
    x = torch.ones(1_000_003)  # not a multiple of 4: the last draw is only partly used
    out = dropout(x, 0.1, training=True)
    dropped = (out == 0).float().mean().item()
    assert abs(dropped - 0.1) < 0.002  # ~6 standard errors of a Bernoulli(0.1) mean over 1M draws
    assert abs(out.mean().item() - 1.0) < 0.003
    assert torch.allclose(out[out != 0], torch.tensor(65536 / (65536 - 6554)))


def test_gradient_is_the_mask_times_the_scale():
    torch.manual_seed(1)
    x = torch.randn(64, 32, requires_grad=True)
    out = dropout(x, 0.3, training=True)
    out.sum().backward()
    kept = out.detach() != 0
    torch.testing.assert_close(x.grad, kept.float() * (65536 / (65536 - round(0.3 * 65536))))


def test_same_seed_same_mask_and_eval_is_identity():
    x = torch.randn(3, 5, 7)
    torch.manual_seed(2)
    first = dropout(x, 0.5, training=True)
    torch.manual_seed(2)
    torch.testing.assert_close(dropout(x, 0.5, training=True), first)
    layer = Dropout(0.5).eval()
    assert layer(x) is x and dropout(x, 0.0, training=True) is x


def test_bf16_input_stays_bf16():
    out = dropout(torch.ones(10, dtype=torch.bfloat16), 0.1, training=True)
    assert out.dtype == torch.bfloat16


def test_rate_outside_range_is_rejected():
    with pytest.raises(ValueError, match=r"outside \[0, 1\)"):
        dropout(torch.ones(4), 1.0, training=True)


def test_float32_path_gives_the_bits_of_mask_times_scale():
    """The fp32 path multiplies by a pre-scaled mask: the same bits as (x * keep) * scale, forward and backward."""
    x = torch.randn(4, 257, requires_grad=True)
    torch.manual_seed(3)
    out = dropout(x, 0.1, training=True)
    out.backward(torch.ones_like(out))
    torch.manual_seed(3)
    dropped_levels = round(0.1 * 65536)
    draws = torch.randint(-(1 << 63), (1 << 63) - 1, ((x.numel() + 3) // 4,), dtype=torch.int64)
    keep = draws.view(torch.int16)[: x.numel()].view(x.shape) >= dropped_levels - (1 << 15)
    scale = 65536 / (65536 - dropped_levels)
    assert torch.equal(out.detach(), x.detach() * keep * scale)
    assert torch.equal(x.grad, torch.ones_like(x) * scale * keep)
