"""Convert GPT-1 weights between gpt1.model.lm.GPT1 and the two public layouts.

- transformers' OpenAIGPTLMHeadModel (`transformer.h.{i}.attn.c_attn.weight`, ...). Its Conv1D stores
  weights as (in, out), nn.Linear as (out, in): every linear weight is transposed on the way.
- OpenAI's release (`params_shapes.json` + `params_{n}.npy`): all arrays concatenated flat and cut into
  files. Order: positions (n_ctx, d), tokens (vocab, d), then per layer the TensorFlow variables in
  creation order: attn/c_attn w (1, d, 3d), b; attn/c_proj w, b; ln_1 g, b; mlp/c_fc w, b; mlp/c_proj w, b;
  ln_2 g, b. `w` has a leading conv width of 1 and is (in, out) like Conv1D.

transformers is not needed here: folders are read and written with json + safetensors. A transformers folder with
the tokenizer beside the weights is gpt1/model/hf_export.py's (it reads the BPE, which importing weights never
needs).
"""

from __future__ import annotations

import json
import pickle
import re
from pathlib import Path
from typing import Mapping

import numpy as np
import torch
from safetensors import SafetensorError
from safetensors.torch import load_file

from gpt1.files.atomic import atomic_directory
from gpt1.errors import UserError
from gpt1.files.text_files import read_text
from gpt1.model.lm import GPT1, TransformerConfig, load_model

HF_PREFIX = "transformer."
LINEAR_WEIGHT = re.compile(r"h\.\d+\.(attn\.c_attn|attn\.c_proj|mlp\.c_fc|mlp\.c_proj)\.weight$")
# The order of one layer's arrays in OpenAI's release, as (our parameter name, is a Conv1D weight).
OPENAI_LAYER_ORDER = (
    ("attn.c_attn.weight", True), ("attn.c_attn.bias", False),
    ("attn.c_proj.weight", True), ("attn.c_proj.bias", False),
    ("ln_1.weight", False), ("ln_1.bias", False),
    ("mlp.c_fc.weight", True), ("mlp.c_fc.bias", False),
    ("mlp.c_proj.weight", True), ("mlp.c_proj.bias", False),
    ("ln_2.weight", False), ("ln_2.bias", False),
)
# Keys some HF checkpoints carry that hold no GPT-1 weights: the causal-mask buffer, position ids and
# the multiple-choice head of OpenAIGPTDoubleHeadsModel.
IGNORED_HF_KEY = re.compile(r"h\.\d+\.attn\.bias$|position_ids$|^multiple_choice_head\.")


def to_hf_state_dict(model: GPT1) -> dict[str, torch.Tensor]:
    """Our weights under OpenAIGPTLMHeadModel's names and shapes (lm_head.weight = token embedding)."""
    converted = {}
    for name, tensor in model.state_dict().items():
        if LINEAR_WEIGHT.search(name):
            tensor = tensor.t()
        converted[HF_PREFIX + name] = tensor.detach().cpu().contiguous()
    converted["lm_head.weight"] = converted[HF_PREFIX + "tokens_embed.weight"].clone()
    return converted


def from_hf_state_dict(state_dict: Mapping[str, torch.Tensor], config: TransformerConfig) -> GPT1:
    """A GPT1 holding an OpenAIGPTLMHeadModel / OpenAIGPTModel state dict (with or without 'transformer.')."""
    state = {}
    for name, tensor in state_dict.items():
        if IGNORED_HF_KEY.search(name):
            continue
        state[name.removeprefix(HF_PREFIX)] = tensor
    output = state.pop("lm_head.weight", None)
    if output is not None and not torch.equal(output, state.get("tokens_embed.weight", output)):
        raise UserError("the checkpoint's lm_head.weight differs from its token embedding; GPT-1 ties them, "
                        "so only checkpoints with tied output weights can be imported")
    for name in list(state):
        if LINEAR_WEIGHT.search(name):
            state[name] = state[name].t()
    return _model_from_state(state, config, source="the transformers checkpoint")


def hf_config_dict(config: TransformerConfig) -> dict:
    """config.json contents for OpenAIGPTLMHeadModel.from_pretrained."""
    if config.d_ff != 4 * config.d_model:
        raise UserError(f"transformers' OpenAI GPT needs d_ff = 4 * d_model, got d_ff {config.d_ff}; "
                        f"set d_ff to {4 * config.d_model} to export")
    return {
        "model_type": "openai-gpt", "architectures": ["OpenAIGPTLMHeadModel"], "afn": "gelu",
        "vocab_size": config.vocab_size, "n_positions": config.n_positions, "n_embd": config.d_model,
        "n_layer": config.n_layer, "n_head": config.n_head, "embd_pdrop": config.embd_dropout,
        "attn_pdrop": config.attn_dropout, "resid_pdrop": config.resid_dropout,
        "layer_norm_epsilon": config.layer_norm_eps, "initializer_range": config.init_std,
        "tie_word_embeddings": True,
    }


def import_hf(directory: Path | str) -> GPT1:
    """Read a transformers OpenAI GPT folder: config.json + model.safetensors (or pytorch_model.bin)."""
    directory = Path(directory)
    config_path = directory / "config.json"
    if not config_path.is_file():
        raise UserError(f"{config_path} not found; point to a transformers 'openai-gpt' model folder")
    hf = _read_json(config_path, dict, "a JSON object of transformers settings")
    if hf.get("model_type", "openai-gpt") != "openai-gpt":
        raise UserError(f"{config_path} is a {hf['model_type']!r} model; only 'openai-gpt' can be imported")
    if hf.get("afn", "gelu") not in ("gelu", "gelu_new"):
        raise UserError(f"{config_path} uses activation afn={hf['afn']!r}; GPT-1 uses 'gelu' (tanh "
                        "approximation), so this model cannot be imported as GPT-1")
    sizes = {key: _setting(hf, key, default, int, config_path) for key, default in
             (("vocab_size", 40478), ("n_positions", 512), ("n_layer", 12), ("n_head", 12), ("n_embd", 768))}
    rates = {key: _setting(hf, key, default, float, config_path) for key, default in
             (("embd_pdrop", 0.1), ("attn_pdrop", 0.1), ("resid_pdrop", 0.1), ("layer_norm_epsilon", 1e-5),
              ("initializer_range", 0.02))}
    width = sizes["n_embd"]
    if width % sizes["n_head"]:
        raise UserError(f"{config_path}: n_embd {width} is not divisible by n_head {sizes['n_head']}")
    config = TransformerConfig(
        vocab_size=sizes["vocab_size"], n_positions=sizes["n_positions"], n_layer=sizes["n_layer"],
        n_head=sizes["n_head"], d_model=width, d_ff=4 * width, embd_dropout=rates["embd_pdrop"],
        attn_dropout=rates["attn_pdrop"], resid_dropout=rates["resid_pdrop"],
        layer_norm_eps=rates["layer_norm_epsilon"], init_std=rates["initializer_range"],
    )
    return from_hf_state_dict(_read_hf_weights(directory), config)


def _setting(hf: dict, key: str, default, kind: type, path: Path):
    """One number of config.json: a positive int for sizes, a finite non-negative float for rates."""
    value = hf.get(key, default)
    if kind is int:
        good = isinstance(value, int) and not isinstance(value, bool) and value > 0
    else:
        good = isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < float("inf")
    if not good:
        wanted = "a positive integer" if kind is int else "a finite number >= 0"
        raise UserError(f"{path}: {key} must be {wanted}, found {value!r}; fix or re-download config.json")
    return kind(value)


def _read_hf_weights(directory: Path) -> dict[str, torch.Tensor]:
    if (directory / "model.safetensors").is_file():
        try:
            return load_file(str(directory / "model.safetensors"))
        except (SafetensorError, OSError) as error:  # truncated or not safetensors at all
            raise UserError(f"{directory / 'model.safetensors'} is not a readable safetensors file ({error}); "
                            "download it again") from None
    if (directory / "pytorch_model.bin").is_file():
        try:
            return torch.load(directory / "pytorch_model.bin", map_location="cpu", weights_only=True)
        except (pickle.UnpicklingError, RuntimeError, EOFError, ValueError, OSError) as error:  # a bad or unsafe file
            raise UserError(f"{directory / 'pytorch_model.bin'} cannot be read safely ({error}); "
                            "convert it to model.safetensors") from error
    raise UserError(f"{directory} has neither model.safetensors nor pytorch_model.bin "
                    "(sharded checkpoints are not supported; GPT-1 fits in one file)")


def export_openai(model: GPT1, directory: Path | str, files: int = 10) -> None:
    """Write OpenAI's release layout (params_shapes.json + params_0..N.npy, float32), which `import_openai`
    reads back bit for bit: the arrays in the release's order, flattened, concatenated, cut into `files`."""
    state = {name: tensor.detach().cpu().float().numpy() for name, tensor in model.state_dict().items()}
    arrays = [state["positions_embed.weight"], state["tokens_embed.weight"]]
    for layer in range(model.config.n_layer):
        for name, is_conv_weight in OPENAI_LAYER_ORDER:
            array = state[f"h.{layer}.{name}"]
            arrays.append(array.T[None] if is_conv_weight else array)  # Conv1D: (1, in, out)
    flat = np.concatenate([array.reshape(-1) for array in arrays])
    with atomic_directory(directory, mark_owner=True) as temporary:
        (temporary / "params_shapes.json").write_text(json.dumps([list(array.shape) for array in arrays]))
        for index, part in enumerate(np.array_split(flat, files)):
            np.save(temporary / f"params_{index}.npy", part)


def import_openai(directory: Path | str, n_head: int = 12) -> GPT1:
    """Read OpenAI's release folder (params_shapes.json + params_0.npy ...). Shapes give every size but
    the number of heads, which must be passed (12 for the released model)."""
    directory = Path(directory)
    shapes = _read_openai_shapes(directory)
    arrays = _split_openai_arrays(directory, shapes)
    (n_positions, width), (vocab_size, token_width) = shapes[0], shapes[1]
    n_layer, remainder = divmod(len(shapes) - 2, len(OPENAI_LAYER_ORDER))
    if token_width != width or remainder or n_layer == 0:
        raise UserError(f"{directory / 'params_shapes.json'} does not have GPT-1's layout (positions, tokens, "
                        f"then {len(OPENAI_LAYER_ORDER)} arrays per layer)")
    d_ff = shapes[2 + 6][-1]  # mlp/c_fc/w is (1, d, d_ff)
    config = TransformerConfig(vocab_size=vocab_size, n_positions=n_positions, n_layer=n_layer,
                               n_head=n_head, d_model=width, d_ff=d_ff)
    state = {"positions_embed.weight": arrays[0], "tokens_embed.weight": arrays[1]}
    for index, array in enumerate(arrays[2:]):
        layer, slot = divmod(index, len(OPENAI_LAYER_ORDER))
        name, is_conv_weight = OPENAI_LAYER_ORDER[slot]
        state[f"h.{layer}.{name}"] = array[0].T if is_conv_weight else array
    tensors = {name: torch.from_numpy(np.ascontiguousarray(array, dtype=np.float32)) for name, array in state.items()}
    return _model_from_state(tensors, config, source=f"OpenAI release folder {directory}")


def _read_openai_shapes(directory: Path) -> list[list[int]]:
    shapes_path = directory / "params_shapes.json"
    if not shapes_path.is_file():
        raise UserError(f"{shapes_path} not found; point to OpenAI's finetune-transformer-lm 'model' folder")
    shapes = _read_json(shapes_path, list, "a list of array shapes")
    if not all(isinstance(shape, list) and all(isinstance(n, int) and not isinstance(n, bool) and n > 0
                                               for n in shape) for shape in shapes):
        raise UserError(f"{shapes_path}: every entry must be a shape, a list of positive integers")
    if len(shapes) < 2 or any(len(shape) != 2 for shape in shapes[:2]):
        raise UserError(f"{shapes_path} does not start with the position and token embedding shapes")
    return shapes


def _read_json(path: Path, kind: type, what: str):
    try:
        value = json.loads(read_text(path))
    except json.JSONDecodeError as error:
        raise UserError(f"{path}: not valid JSON (line {error.lineno}: {error.msg}); download it again") from None
    if not isinstance(value, kind):
        raise UserError(f"{path}: expected {what}, found {type(value).__name__}")
    return value


def _split_openai_arrays(directory: Path, shapes: list[list[int]]) -> list[np.ndarray]:
    """The release's own recipe: concatenate params_0.npy, params_1.npy, ... then split by the shapes."""
    parts = []
    while (path := directory / f"params_{len(parts)}.npy").is_file():
        try:
            part = np.load(path, allow_pickle=False).reshape(-1)
        except ValueError as error:  # object arrays would need unpickling, which could run code
            raise UserError(f"{path} is not a plain numeric array ({error}); re-download the release") from None
        if part.dtype.kind not in "fiu":
            raise UserError(f"{path} holds {part.dtype} values, not numbers; re-download the release's model folder")
        parts.append(part)
    sizes = [int(np.prod(shape)) for shape in shapes]
    total = sum(part.size for part in parts)
    if total != sum(sizes):
        raise UserError(f"{directory} holds {len(parts)} params_N.npy file(s) with {total} numbers, but "
                        f"params_shapes.json needs {sum(sizes)}; re-download the release's model folder")
    flat = np.concatenate(parts)
    pieces = np.split(flat, np.cumsum(sizes)[:-1])
    return [piece.reshape(shape) for piece, shape in zip(pieces, shapes)]


def _model_from_state(state: dict[str, torch.Tensor], config: TransformerConfig, source: str) -> GPT1:
    model = GPT1(config)
    expected = model.state_dict()
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    wrong_shape = [name for name in expected if name in state and state[name].shape != expected[name].shape]
    if missing or unexpected or wrong_shape:
        raise UserError(f"{source} does not fit GPT-1 with {config}: missing {missing[:5]}, unexpected "
                        f"{unexpected[:5]}, wrong shape {wrong_shape[:5]}")
    model.load_state_dict({name: tensor.float() for name, tensor in state.items()})
    return model.eval()


def import_weights(directory: Path | str, n_head: int = 12) -> GPT1:
    """Import either released format, recognised by its files."""
    directory = Path(directory)
    if (directory / "config.json").exists():
        return import_hf(directory)
    if (directory / "params_shapes.json").exists():
        return import_openai(directory, n_head=n_head)
    raise UserError(f"{directory}: neither an HF folder (config.json) nor OpenAI's release (params_shapes.json)")


def initial_weights(path: Path, config: TransformerConfig) -> GPT1:
    """Released (or earlier) weights to start from, checked against params.yaml's model section; the BPE's
    special tokens are added as new embedding rows when the weights have none."""
    if not path.exists():
        raise UserError(f"pretrain.init_from: {path} does not exist")
    model = load_model(path) if path.is_file() else import_weights(path, n_head=config.n_head)
    theirs, ours = model.config, config
    shape = ("n_layer", "n_head", "d_model", "d_ff", "n_positions")
    if any(getattr(theirs, name) != getattr(ours, name) for name in shape):
        raise UserError(f"pretrain.init_from: {path} has shape "
                        f"{ {name: getattr(theirs, name) for name in shape} }; set params.yaml's model section to it")
    if theirs.vocab_size > ours.vocab_size:
        raise UserError(f"pretrain.init_from: {path} has {theirs.vocab_size} tokens but the BPE has {ours.vocab_size}; "
                        "use the BPE those weights were trained with (bpe.import_from)")
    if theirs.vocab_size < ours.vocab_size:
        model.resize_token_embeddings(ours.vocab_size)
    return model
