"""GPT1 and the LSTM baseline: size, structure, equivalence with transformers, checkpoints."""

import json

import pytest
import torch
import torch.nn.functional as F
from safetensors import safe_open
from transformers import OpenAIGPTConfig, OpenAIGPTLMHeadModel

from gpt1.errors import UserError
from gpt1.model.lm import (
    GPT1,
    LSTMConfig,
    LSTMLanguageModel,
    TransformerConfig,
    build_model,
    load_model,
    save_model,
)
from gpt1.model.weights import from_hf_state_dict, to_hf_state_dict

TINY = dict(vocab_size=100, n_positions=32, n_layer=2, n_head=4, d_model=64, d_ff=256)
TINY_HF = dict(vocab_size=100, n_positions=32, n_layer=2, n_head=4, n_embd=64)


def tiny_gpt(seed: int = 0) -> GPT1:
    torch.manual_seed(seed)
    model = GPT1(TransformerConfig(**TINY))
    randomise_all(model)
    return model.eval()


def randomise_all(model: torch.nn.Module) -> None:
    """Give biases and LayerNorms non-default values too, so a swapped or transposed tensor shows up."""
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.normal_(0.0, 0.2 if parameter.dim() == 1 else 0.05)


def tokens(batch: int = 2, length: int = 16, vocab: int = 100, seed: int = 1) -> torch.Tensor:
    return torch.randint(0, vocab, (batch, length), generator=torch.Generator().manual_seed(seed))


def test_parameter_count_is_the_papers_and_matches_transformers():
    with torch.device("meta"):
        ours = GPT1(TransformerConfig(vocab_size=40478, n_positions=512))
        reference = OpenAIGPTLMHeadModel(OpenAIGPTConfig())
    assert ours.num_parameters() == 116_534_784
    assert ours.num_parameters() == sum(p.numel() for p in reference.parameters())


def test_blocks_are_post_layernorm_with_no_final_norm():
    model = tiny_gpt()
    names = {name for name, _ in model.named_modules()}
    assert not any(name.startswith(("ln_f", "final")) for name in names)
    block, x = model.h[0], torch.randn(2, 8, 64)
    h = block.ln_1(x + block.attn(x))
    expected = block.ln_2(h + block.mlp(h))
    torch.testing.assert_close(block(x), expected)
    # With unit gains and zero biases the output of the last block is exactly normalised per position.
    model = GPT1(TransformerConfig(**TINY)).eval()
    hidden = model.hidden_states(tokens())
    torch.testing.assert_close(hidden.mean(-1), torch.zeros(2, 16), atol=1e-5, rtol=0)
    torch.testing.assert_close(hidden.var(-1, unbiased=False), torch.ones(2, 16), atol=1e-3, rtol=0)


def test_mlp_uses_the_tanh_approximation_of_gelu():
    mlp = tiny_gpt().h[0].mlp
    x = 20 * torch.randn(4, 64)  # large pre-activations, where the two GELUs differ
    pre = mlp.c_fc(x)
    tanh_gelu = 0.5 * pre * (1 + torch.tanh((2 / torch.pi) ** 0.5 * (pre + 0.044715 * pre**3)))
    torch.testing.assert_close(mlp(x), mlp.c_proj(tanh_gelu), atol=1e-6, rtol=1e-6)
    assert not torch.allclose(mlp(x), mlp.c_proj(F.gelu(pre)), atol=1e-6, rtol=1e-6)


def test_initialisation_follows_the_paper():
    torch.manual_seed(0)
    model = GPT1(TransformerConfig(vocab_size=1000, d_model=128, n_head=4, d_ff=512, n_layer=2))
    assert abs(model.tokens_embed.weight.std().item() - 0.02) < 1e-3
    assert abs(model.h[0].mlp.c_fc.weight.std().item() - 0.02) < 1e-3
    assert torch.all(model.h[1].attn.c_attn.bias == 0)
    assert torch.all(model.h[1].ln_2.weight == 1) and torch.all(model.h[1].ln_2.bias == 0)


def test_attention_is_causal():
    model, ids = tiny_gpt(), tokens()
    changed = ids.clone()
    changed[:, 9] = (changed[:, 9] + 1) % 100
    before, after = model(ids), model(changed)
    torch.testing.assert_close(before[:, :9], after[:, :9])
    assert not torch.allclose(before[:, 9:], after[:, 9:])


@pytest.mark.parametrize("which", ["embd_dropout", "attn_dropout", "resid_dropout"])
def test_each_dropout_acts_only_in_training_mode(which):
    settings = {**TINY, "embd_dropout": 0.0, "attn_dropout": 0.0, "resid_dropout": 0.0, which: 0.5}
    model, ids = GPT1(TransformerConfig(**settings)).eval(), tokens()
    torch.testing.assert_close(model(ids), model(ids))
    model.train()
    assert not torch.allclose(model(ids), model(ids))


def test_hf_weights_give_the_same_logits_and_loss_in_ours():
    torch.manual_seed(0)
    reference = OpenAIGPTLMHeadModel(OpenAIGPTConfig(**TINY_HF)).eval()
    randomise_all(reference)
    ours = from_hf_state_dict(reference.state_dict(), TransformerConfig(**TINY))
    ids = tokens()
    expected = reference(ids, labels=ids)
    targets = torch.cat([ids[:, 1:], torch.full((2, 1), -100)], dim=1)  # ours takes shifted targets
    logits, loss = ours(ids), ours(ids, targets)
    torch.testing.assert_close(logits, expected.logits, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(loss, expected.loss, atol=1e-5, rtol=1e-5)


def test_our_weights_give_the_same_logits_in_transformers():
    ours, ids = tiny_gpt(), tokens()
    reference = OpenAIGPTLMHeadModel(OpenAIGPTConfig(**TINY_HF)).eval()
    reference.load_state_dict(to_hf_state_dict(ours), strict=True)
    torch.testing.assert_close(reference(ids).logits, ours(ids), atol=1e-4, rtol=1e-4)


def test_output_layer_is_the_token_embedding():
    model = tiny_gpt()
    hidden = model.hidden_states(tokens())
    torch.testing.assert_close(model.lm_logits(hidden), hidden @ model.tokens_embed.weight.T)
    assert not any(p is not model.tokens_embed.weight and p.shape == (100, 64) for p in model.parameters())


def test_loss_ignores_minus_100():
    model, ids = tiny_gpt(), tokens()
    targets = ids.clone()
    targets[:, 8:] = -100
    logits, loss = model(ids), model(ids, targets)
    expected = F.cross_entropy(logits[:, :8].reshape(-1, 100), ids[:, :8].reshape(-1))
    torch.testing.assert_close(loss, expected)


def test_too_long_sequence_is_rejected():
    with pytest.raises(ValueError, match="n_positions"):
        tiny_gpt()(tokens(length=33))


def test_resize_token_embeddings_keeps_old_rows_and_adds_new_ones():
    model = tiny_gpt()
    old = model.tokens_embed.weight.detach().clone()
    model.resize_token_embeddings(103)
    new = model.tokens_embed.weight
    assert new.shape == (103, 64) and model.config.vocab_size == 103
    torch.testing.assert_close(new[:100], old)
    assert 0.005 < new[100:].std().item() < 0.06  # N(0, 0.02), not zeros, not copies
    ids = torch.tensor([[100, 5, 101, 7, 102]])
    assert model(ids).shape == (1, 5, 103)
    with pytest.raises(ValueError):
        model.resize_token_embeddings(50)


@pytest.mark.parametrize("kind,config", [("transformer", TINY), ("lstm", dict(vocab_size=50, d_embed=16, d_hidden=32))])
def test_parameter_groups_decay_only_matrices(kind, config):
    model = build_model(kind, config)
    decay, no_decay = model.parameter_groups(0.01)
    assert decay["weight_decay"] == 0.01 and no_decay["weight_decay"] == 0.0
    assert all(p.dim() >= 2 for p in decay["params"]) and all(p.dim() < 2 for p in no_decay["params"])
    grouped = [id(p) for p in decay["params"] + no_decay["params"]]
    assert sorted(grouped) == sorted(id(p) for p in model.parameters())
    assert len(set(grouped)) == len(grouped)
    torch.optim.AdamW(model.parameter_groups(0.01), lr=1e-3)  # accepted as given


@pytest.mark.parametrize("kind,config", [("transformer", TINY), ("lstm", dict(vocab_size=100, d_embed=16, d_hidden=32))])
def test_save_and_load_round_trip(tmp_path, kind, config):
    model = build_model(kind, config)
    model.resize_token_embeddings(103)
    model.eval()
    path = tmp_path / "model.safetensors"
    save_model(model, path)
    with safe_open(str(path), framework="pt") as handle:
        metadata = handle.metadata()
        assert "lm_head.weight" not in handle.keys()
    described = json.loads(metadata["gpt1"])
    assert described["kind"] == kind and described["config"]["vocab_size"] == 103
    loaded = load_model(path)
    assert type(loaded) is type(model) and loaded.config == model.config and not loaded.training
    ids = tokens(vocab=103)
    torch.testing.assert_close(loaded(ids), model(ids))
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left behind


def test_load_model_explains_bad_files(tmp_path):
    with pytest.raises(UserError, match="does not exist"):
        load_model(tmp_path / "missing.safetensors")
    garbage = tmp_path / "garbage.safetensors"
    garbage.write_bytes(b"not a checkpoint" * 10)
    with pytest.raises(UserError, match="safetensors"):
        load_model(garbage)


def test_build_model_rejects_unknown_kind_and_settings():
    with pytest.raises(UserError, match="kind"):
        build_model("rnn", {})
    with pytest.raises(UserError, match="n_embd"):
        build_model("transformer", {"n_embd": 64})
    with pytest.raises(UserError, match="divisible"):
        build_model("transformer", {**TINY, "n_head": 5})


def test_lstm_shapes_and_learning():
    torch.manual_seed(0)
    model = build_model("lstm", dict(vocab_size=30, d_embed=16, d_hidden=32, dropout=0.0))
    ids = torch.arange(24).remainder(6).view(2, 12)  # a repeated pattern
    assert model.hidden_states(ids).shape == (2, 12, 32)
    targets = torch.roll(ids, -1, dims=1)
    logits, first_loss = model(ids), model(ids, targets)
    assert logits.shape == (2, 12, 30)
    optimizer = torch.optim.AdamW(model.parameter_groups(0.01), lr=3e-2)
    for _ in range(80):
        optimizer.zero_grad()
        loss = model(ids, targets)
        loss.backward()
        optimizer.step()
    assert first_loss.item() > 3.0  # about ln(30): nothing learnt yet
    assert loss.item() < 0.5  # far below ln(6): it predicts from context, not just token frequencies


def test_lstm_default_is_the_papers_baseline():
    with torch.device("meta"):
        model = LSTMLanguageModel(LSTMConfig())
    assert model.lstm.hidden_size == 2048 and model.lstm.num_layers == 1
    assert model.output_projection.weight.shape == (768, 2048)


def test_saved_files_are_byte_identical_across_processes(tmp_path):
    """Reproducible pipelines compare outputs byte for byte; the file must not depend on hash order."""
    import subprocess
    import sys

    script = ("import sys, torch; from gpt1.model.lm import build_model, save_model; torch.manual_seed(0); "
              "save_model(build_model('transformer', dict(vocab_size=50, n_positions=16, n_layer=1, n_head=2, "
              "d_model=16, d_ff=32)), sys.argv[1])")
    for name in ("a", "b", "c"):
        subprocess.run([sys.executable, "-c", script, str(tmp_path / name)], check=True)
    assert (tmp_path / "a").read_bytes() == (tmp_path / "b").read_bytes() == (tmp_path / "c").read_bytes()


def test_cpu_training_attention_equals_sdpa_when_nothing_is_dropped(monkeypatch):
    """The spelled-out CPU attention (used for its cheap dropout masks) computes what SDPA computes."""
    import gpt1.model.lm as model_module

    torch.manual_seed(0)
    block = model_module.CausalSelfAttention(TransformerConfig(**{**TINY, "resid_dropout": 0.0}))
    x = torch.randn(2, 9, TINY["d_model"])
    monkeypatch.setattr(model_module, "dropout", lambda tensor, p, training: tensor)
    spelled_out = block.train()(x)
    torch.testing.assert_close(spelled_out, block.eval()(x), atol=1e-5, rtol=1e-5)


def test_bf16_layer_norm_outputs_change_only_the_dtype_under_autocast():
    model, ids = tiny_gpt(), tokens()
    targets = torch.roll(ids, -1, dims=1)
    plain = model.hidden_states(ids)
    model.keep_autocast_dtype_in_layer_norms()
    torch.testing.assert_close(model.hidden_states(ids), plain, atol=0, rtol=0)  # without autocast: nothing changes
    with torch.autocast("cpu", dtype=torch.bfloat16):
        kept = model.hidden_states(ids)
        model.keep_autocast_dtype_in_layer_norms(False)
        autocast_fp32 = model.hidden_states(ids)
    assert (kept.dtype, autocast_fp32.dtype) == (torch.bfloat16, torch.float32)
    torch.testing.assert_close(kept.float(), autocast_fp32, atol=0.1, rtol=0.05)  # bf16 rounding, nothing more
    model.keep_autocast_dtype_in_layer_norms()
    model.train(), model.zero_grad()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = model(ids, targets)
    loss.backward()
    gain = model.h[0].ln_1.weight
    assert gain.dtype == gain.grad.dtype == torch.float32
    assert torch.isfinite(gain.grad).all() and gain.grad.abs().sum() > 0
    assert set(model.state_dict()) == set(tiny_gpt().state_dict())  # the same weights, the same names
