"""A model file as gpt1 writes every one: a safetensors file whose one metadata entry is a JSON description.

One entry, written with sorted keys: safetensors writes several in hash-map order, and two runs must give the
same bytes. The language models (gpt1.model.lm) and the fine-tuned task models (gpt1.model.task_checkpoint)
differ only in their entry's name and what it describes.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file, save_file

from gpt1.files.atomic import atomic_path
from gpt1.errors import UserError


def write(module: torch.nn.Module, path: Path | str, key: str, description: dict) -> None:
    """The module's state dict and `description` (under metadata `key`) to `path`, atomically."""
    tensors = {name: tensor.detach().cpu().contiguous() for name, tensor in module.state_dict().items()}
    with atomic_path(path) as temporary:
        save_file(tensors, str(temporary), metadata={key: json.dumps(description, sort_keys=True)})


# The metadata entry of a file that stands where a model would and holds none: a declared output of a pretraining
# job with nothing to train (gpt1/params/applicability.py), so that the pipeline completes and says why.
NOT_APPLICABLE_KEY = "gpt1.not_applicable"


def write_not_applicable(path: Path | str, reason: str) -> None:
    """A safetensors file with no tensors whose metadata says why there is no model, atomically."""
    with atomic_path(path) as temporary:
        save_file({}, str(temporary), metadata={NOT_APPLICABLE_KEY: reason})


def _metadata(path: Path | str) -> dict[str, str]:
    with safe_open(str(path), framework="pt") as handle:
        return handle.metadata() or {}


def has_entry(path: Path | str, key: str) -> bool:
    """Whether `path` is a safetensors file with the metadata entry `key` (False for a file of any other kind)."""
    try:
        return key in _metadata(path)
    except (SafetensorError, OSError):
        return False


def read(path: Path, key: str, device: str | torch.device, *, absent: str, unreadable: str,
         foreign: str) -> tuple[str, dict[str, torch.Tensor]]:
    """(the metadata entry `key`, still JSON text, and the tensors). One UserError for each way a file fails:
    `absent` (no such file), `unreadable` (not safetensors; `{error}` is filled in), `foreign` (no `key`)."""
    if not path.is_file():
        raise UserError(absent)
    try:
        metadata = _metadata(path)
        tensors = load_file(str(path), device=str(device))
    except (SafetensorError, OSError) as error:
        raise UserError(unreadable.format(error=error)) from None
    if NOT_APPLICABLE_KEY in metadata:
        raise UserError(f"{path} holds no model: not applicable: {metadata[NOT_APPLICABLE_KEY]}")
    if key not in metadata:
        raise UserError(foreign)
    return metadata[key], tensors
