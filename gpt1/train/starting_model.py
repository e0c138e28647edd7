"""Where each training starts: a fresh model sized by params.yaml, and the fine-tuning variants' starting
models (Table 5, Figure 2 left). Released weights for pretraining's `init_from` are gpt1.model.weights's.
Building a model draws from the global torch RNG: seed it first."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Literal

from gpt1.config import VARIANTS, Params
from gpt1.errors import UserError
from gpt1.model.lm import GPT1, LanguageModel, LSTMConfig, TransformerConfig, build_model, load_model

log = logging.getLogger(__name__)
Kind = Literal["transformer", "lstm"]


def model_config(params: Params, kind: Kind, vocab_size: int) -> TransformerConfig | LSTMConfig:
    if kind == "transformer":
        m = params.model
        return TransformerConfig(vocab_size=vocab_size, n_positions=m.n_positions, n_layer=m.n_layer,
                                 n_head=m.n_head, d_model=m.d_model, d_ff=m.d_ff, embd_dropout=m.dropout,
                                 attn_dropout=m.dropout, resid_dropout=m.dropout)
    if kind == "lstm":
        m = params.lstm
        return LSTMConfig(vocab_size=vocab_size, d_embed=m.d_embed, d_hidden=m.d_hidden, n_layer=m.n_layer,
                          dropout=m.dropout)
    raise UserError(f"unknown model kind {kind!r}; use 'transformer' or 'lstm'")


def pretrained(path: Path, vocab_size: int) -> LanguageModel:
    model = load_model(path)
    have = model.config.vocab_size
    if have > vocab_size:
        raise UserError(f"{path} has {have} token embeddings but data/bpe has {vocab_size} tokens; "
                        "pretrain with the current BPE")
    if have < vocab_size:  # start / delimiter / extract are new, learned embeddings
        model.resize_token_embeddings(vocab_size)
    return model


def reinitialise_blocks(model: GPT1, keep: int) -> None:
    """Figure 2: keep embeddings and blocks [0, keep); blocks [keep, n_layer) get a fresh initialisation."""
    if not 0 <= keep <= model.config.n_layer:
        raise UserError(f"transfer_layers {keep} is outside 0..{model.config.n_layer} (the model's layers)")
    if keep == model.config.n_layer:
        # Building a fresh model would draw from the global RNG and shift the head's init and dropout:
        # keeping every block must be the `full` run exactly, which Figure 2 reuses as its k = n_layer point.
        return
    fresh = GPT1(model.config)
    for index in range(keep, model.config.n_layer):
        model.h[index].load_state_dict(fresh.h[index].state_dict())


def language_model(params: Params, variant: str, vocab_size: int, pretrain_dir: Path,
                   transfer_layers: int | None = None) -> LanguageModel:
    """The variant's starting model (uses the global torch RNG: seed it first)."""
    if variant not in VARIANTS:
        raise UserError(f"unknown fine-tuning variant {variant!r}; use one of {', '.join(VARIANTS)}")
    if variant == "no_pretrain":
        if transfer_layers is not None:
            raise UserError("transfer_layers needs pretrained weights; use variant full or no_aux_lm")
        return build_model("transformer", model_config(params, "transformer", vocab_size))
    kind = "lstm" if variant == "lstm" else "transformer"
    model = pretrained(Path(pretrain_dir) / kind / "model.safetensors", vocab_size)
    if transfer_layers is not None:
        if kind != "transformer":
            raise UserError("transfer_layers applies to the Transformer variants (full, no_aux_lm)")
        reinitialise_blocks(model, transfer_layers)
    return model


def context_length(params: Params, model: LanguageModel) -> int:
    """The Transformer's positions; the LSTM gets the same inputs as the Transformer it is compared with."""
    return model.config.n_positions if model.kind == "transformer" else params.model.n_positions
