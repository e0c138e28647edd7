"""The fused, chunked output layer + cross-entropy equals the plain two-step computation."""

import pytest
import torch
import torch.nn.functional as F

from gpt1.model.lm_loss import checked_lm_loss_kind, dense_linear_cross_entropy, linear_cross_entropy


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


def test_the_dense_loss_gives_the_chunked_losss_value_and_gradients_also_with_nothing_to_predict():
    inputs = _inputs()
    dense = _value_and_grads(dense_linear_cross_entropy, *inputs)
    for got, expected in zip(dense, _value_and_grads(lambda h, w, t: linear_cross_entropy(h, w, t, 8), *inputs)):
        torch.testing.assert_close(got, expected, atol=1e-6, rtol=1e-5)
    nothing = torch.full((inputs[0].shape[0],), -100)
    loss, hidden_grad, weight_grad = _value_and_grads(dense_linear_cross_entropy, inputs[0], inputs[1], nothing)
    assert loss.item() == 0.0 and not hidden_grad.any() and not weight_grad.any()


def test_a_model_switched_to_the_dense_loss_trains_as_the_chunked_one():
    from gpt1.errors import UserError
    from gpt1.model.lm import GPT1, TransformerConfig

    config = dict(vocab_size=50, n_positions=8, n_layer=1, n_head=2, d_model=16, d_ff=32,
                  embd_dropout=0.0, attn_dropout=0.0, resid_dropout=0.0)
    torch.manual_seed(0)
    chunked = GPT1(TransformerConfig(**config))
    dense = GPT1(TransformerConfig(**config))
    dense.lm_loss_kind = checked_lm_loss_kind("dense")
    dense.load_state_dict(chunked.state_dict())
    tokens = torch.randint(0, 50, (3, 9), generator=torch.Generator().manual_seed(1))
    losses = []
    for model in (chunked, dense):
        loss = model(tokens[:, :-1], tokens[:, 1:])
        loss.backward()
        losses.append(loss.detach())
    torch.testing.assert_close(losses[0], losses[1], atol=1e-6, rtol=1e-6)
    for (name, ours), theirs in zip(chunked.named_parameters(), dense.parameters()):
        torch.testing.assert_close(ours.grad, theirs.grad, atol=1e-6, rtol=1e-5, msg=name)
    with pytest.raises(UserError, match="unknown LM loss 'sparse'; use one of chunked, dense"):
        checked_lm_loss_kind("sparse")


@pytest.mark.parametrize("kind", ["chunked", "dense"])
def test_an_output_layer_padded_to_a_multiple_of_64_changes_no_logit_loss_gradient_or_weight_shape(kind, tmp_path):
    """A GPU pads the output matrix's rows (LanguageModel.pad_vocab_to); forced here on a CPU: the logits of the real
    vocabulary, the loss and every gradient equal the unpadded model's, the padded rows are never predicted, and
    the weights it saves and exports keep the vocabulary's shape."""
    from gpt1.model.lm import GPT1, TransformerConfig, load_model, save_model
    from gpt1.model.hf_export import export_hf
    from gpt1.model.weights import import_hf

    torch.manual_seed(0)
    config = TransformerConfig(vocab_size=101, n_positions=16, n_layer=2, n_head=2, d_model=16, d_ff=64,
                               embd_dropout=0.0, attn_dropout=0.0, resid_dropout=0.0)
    plain = GPT1(config).train()
    padded = GPT1(config).train()
    padded.load_state_dict(plain.state_dict())
    plain.pad_vocab_to, padded.pad_vocab_to = 1, 64
    plain.lm_loss_kind = padded.lm_loss_kind = kind
    assert padded.output_weight().shape == (128, 16) and plain.output_weight().shape == (101, 16)
    ids = torch.randint(0, 101, (3, 16), generator=torch.Generator().manual_seed(1))
    targets = torch.roll(ids, -1, dims=1)
    targets[:, -1] = -100
    logits = padded(ids)
    assert logits.shape == (3, 16, 101)
    torch.testing.assert_close(logits, plain(ids), atol=1e-6, rtol=1e-5)
    losses = [model(ids, targets) for model in (plain, padded)]
    torch.testing.assert_close(losses[1], losses[0], atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(losses[0], F.cross_entropy(plain(ids).reshape(-1, 101), targets.reshape(-1)))
    for loss in losses:
        loss.backward()
    for (name, ours), theirs in zip(padded.named_parameters(), plain.parameters()):
        torch.testing.assert_close(ours.grad, theirs.grad, atol=1e-6, rtol=1e-5, msg=name)
    assert padded.tokens_embed.weight.grad.shape == (101, 16)
    save_model(padded, tmp_path / "model.safetensors")
    assert load_model(tmp_path / "model.safetensors").tokens_embed.weight.shape == (101, 16)
    export_hf(padded, tmp_path / "hf")
    assert import_hf(tmp_path / "hf").tokens_embed.weight.shape == (101, 16)


def test_the_output_layer_is_padded_on_a_gpu_only_unless_told():
    from gpt1.model.lm import GPT1, VOCAB_MULTIPLE, TransformerConfig

    model = GPT1(TransformerConfig(vocab_size=101, n_positions=8, n_layer=1, n_head=2, d_model=8, d_ff=16))
    assert model.output_weight() is model.tokens_embed.weight  # a CPU: the default's results stay as they were
    model.pad_vocab_to = VOCAB_MULTIPLE
    assert model.output_weight().shape[0] == 128 and not model.output_weight()[101:].any()
