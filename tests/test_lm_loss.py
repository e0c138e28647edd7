"""The fused, chunked output layer + cross-entropy equals the plain two-step computation."""

import pytest
import torch
import torch.nn.functional as F

from gpt1.model.lm_loss import linear_cross_entropy


def _inputs(rows=37, width=16, vocab=50, seed=0):
    generator = torch.Generator().manual_seed(seed)
    hidden = torch.randn(rows, width, generator=generator)
    weight = torch.randn(vocab, width, generator=generator) * 0.3
    targets = torch.randint(0, vocab, (rows,), generator=generator)
    targets[::5] = -100
    return hidden, weight, targets


def _value_and_grads(loss_fn, hidden, weight, targets):
    hidden, weight = hidden.clone().requires_grad_(), weight.clone().requires_grad_()
    loss = loss_fn(hidden, weight, targets)
    (3.0 * loss).backward()  # a scaled loss (as λ·L1) must scale the gradients
    return loss.detach(), hidden.grad, weight.grad


def _reference(hidden, weight, targets):
    return F.cross_entropy(F.linear(hidden, weight), targets, ignore_index=-100)


@pytest.mark.parametrize("chunk_rows", [1, 8, 36, 37, 500])
def test_value_and_gradients_equal_the_unfused_loss(chunk_rows):
    inputs = _inputs()
    ours = _value_and_grads(lambda h, w, t: linear_cross_entropy(h, w, t, chunk_rows), *inputs)
    for got, expected in zip(ours, _value_and_grads(_reference, *inputs)):
        torch.testing.assert_close(got, expected, atol=1e-6, rtol=1e-5)


def test_without_gradients_it_gives_the_same_value():
    hidden, weight, targets = _inputs()
    with torch.no_grad():
        torch.testing.assert_close(linear_cross_entropy(hidden, weight, targets, 8),
                                   _reference(hidden, weight, targets))


def test_bf16_autocast_stays_close():
    inputs = _inputs(rows=64, width=32, vocab=200)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ours = _value_and_grads(lambda h, w, t: linear_cross_entropy(h, w, t, 16), *inputs)
    expected = _value_and_grads(_reference, *inputs)
    assert ours[0].dtype == torch.float32 and ours[2].dtype == torch.float32
    torch.testing.assert_close(ours[0], expected[0], atol=2e-2, rtol=1e-2)
    for got, want in zip(ours[1:], expected[1:]):
        assert (got - want).norm() / want.norm() < 2e-2


def test_only_ignored_targets_give_zero_and_zero_gradients():
    hidden, weight, _ = _inputs()
    loss, hidden_grad, weight_grad = _value_and_grads(
        linear_cross_entropy, hidden, weight, torch.full((hidden.shape[0],), -100))
    assert loss.item() == 0.0 and not hidden_grad.any() and not weight_grad.any()


def test_shapes_are_checked():
    hidden, weight, targets = _inputs()
    with pytest.raises(ValueError, match=r"expected hidden \(N, d\) and targets \(N,\)"):
        linear_cross_entropy(hidden[None], weight, targets)
