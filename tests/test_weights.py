"""Importing and exporting GPT-1 weights: transformers folders and OpenAI's original release format."""

import json

import numpy as np
import pytest
import torch
from transformers import OpenAIGPTConfig, OpenAIGPTLMHeadModel

from gpt1.errors import UserError
from gpt1.model.lm import GPT1, TransformerConfig
from gpt1.model.hf_export import export_hf
from gpt1.model.weights import import_hf, import_openai

TINY_HF = dict(vocab_size=100, n_positions=32, n_layer=2, n_head=4, n_embd=64)
CONV1D_SUFFIXES = ("c_attn.weight", "c_proj.weight", "c_fc.weight")


@pytest.fixture(scope="module")
def reference() -> OpenAIGPTLMHeadModel:
    torch.manual_seed(0)
    model = OpenAIGPTLMHeadModel(OpenAIGPTConfig(**TINY_HF)).eval()
    with torch.no_grad():  # non-default biases and LayerNorms, so a swapped tensor shows up
        for parameter in model.parameters():
            parameter.normal_(0.0, 0.2 if parameter.dim() == 1 else 0.05)
    return model


@pytest.fixture
def ids() -> torch.Tensor:
    return torch.randint(0, 100, (2, 16), generator=torch.Generator().manual_seed(1))


def assert_same_logits(ours: GPT1, reference: OpenAIGPTLMHeadModel, ids: torch.Tensor) -> None:
    with torch.no_grad():
        torch.testing.assert_close(ours(ids), reference(ids).logits, atol=1e-4, rtol=1e-4)


def write_openai_release(reference: OpenAIGPTLMHeadModel, directory, n_files: int = 10) -> None:
    """What finetune-transformer-lm ships: shapes json + one flat float32 stream cut into n_files .npy."""
    state = {k.removeprefix("transformer."): v.numpy() for k, v in reference.state_dict().items()}
    arrays = [state["positions_embed.weight"], state["tokens_embed.weight"]]
    for layer in range(reference.config.n_layer):
        for name in ("attn.c_attn", "attn.c_proj", "ln_1", "mlp.c_fc", "mlp.c_proj", "ln_2"):
            weight = state[f"h.{layer}.{name}.weight"]
            arrays += [weight[None] if weight.ndim == 2 else weight, state[f"h.{layer}.{name}.bias"]]
    directory.mkdir(exist_ok=True)
    (directory / "params_shapes.json").write_text(json.dumps([list(a.shape) for a in arrays]))
    flat = np.concatenate([a.reshape(-1) for a in arrays]).astype(np.float32)
    for index, part in enumerate(np.array_split(flat, n_files)):
        np.save(directory / f"params_{index}.npy", part)


def test_import_hf_safetensors_folder(tmp_path, reference, ids):
    reference.save_pretrained(tmp_path)
    assert (tmp_path / "model.safetensors").is_file()
    model = import_hf(tmp_path)
    assert model.config == TransformerConfig(vocab_size=100, n_positions=32, n_layer=2, n_head=4, d_model=64, d_ff=256)
    assert_same_logits(model, reference, ids)


def test_import_hf_pytorch_bin_folder(tmp_path, reference, ids):
    reference.config.to_json_file(tmp_path / "config.json")
    state = reference.state_dict()
    torch.save({k: v for k, v in state.items() if k != "lm_head.weight"}, tmp_path / "pytorch_model.bin")
    assert_same_logits(import_hf(tmp_path), reference, ids)


def test_export_hf_loads_in_transformers(tmp_path, reference, ids):
    reference.save_pretrained(tmp_path / "reference")
    model = import_hf(tmp_path / "reference")
    export_hf(model, tmp_path / "exported")
    reloaded = OpenAIGPTLMHeadModel.from_pretrained(tmp_path / "exported").eval()
    assert reloaded.lm_head.weight.data_ptr() == reloaded.transformer.tokens_embed.weight.data_ptr()
    assert_same_logits(model, reloaded, ids)


def test_import_hf_rejects_other_activations_and_missing_files(tmp_path, reference):
    with pytest.raises(UserError, match="config.json"):
        import_hf(tmp_path / "nowhere")
    reference.config.to_json_file(tmp_path / "config.json")
    with pytest.raises(UserError, match="neither model.safetensors nor pytorch_model.bin"):
        import_hf(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, "afn": "relu"}))
    with pytest.raises(UserError, match="afn='relu'"):
        import_hf(tmp_path)


def test_import_hf_rejects_untied_output_layer(tmp_path, reference):
    reference.config.to_json_file(tmp_path / "config.json")
    state = {k: v.clone() for k, v in reference.state_dict().items()}
    state["lm_head.weight"] += 1.0
    torch.save(state, tmp_path / "pytorch_model.bin")
    with pytest.raises(UserError, match="ties"):
        import_hf(tmp_path)


@pytest.mark.parametrize("n_files", [10, 3])
def test_import_openai_release_format(tmp_path, reference, ids, n_files):
    write_openai_release(reference, tmp_path, n_files)
    model = import_openai(tmp_path, n_head=4)
    assert (model.config.n_layer, model.config.d_model, model.config.d_ff) == (2, 64, 256)
    assert (model.config.vocab_size, model.config.n_positions) == (100, 32)
    assert_same_logits(model, reference, ids)


def test_import_openai_explains_broken_folders(tmp_path, reference):
    with pytest.raises(UserError, match="params_shapes.json"):
        import_openai(tmp_path)
    write_openai_release(reference, tmp_path)
    (tmp_path / "params_9.npy").unlink()
    with pytest.raises(UserError, match="numbers"):
        import_openai(tmp_path, n_head=4)
    write_openai_release(reference, tmp_path)
    with pytest.raises(UserError, match="divisible"):
        import_openai(tmp_path, n_head=5)
    np.save(tmp_path / "params_0.npy", np.array([object()], dtype=object), allow_pickle=True)
    with pytest.raises(UserError, match="pickle"):  # object arrays are refused, never unpickled
        import_openai(tmp_path, n_head=4)
