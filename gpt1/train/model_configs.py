"""A fresh model's configuration, sized by params.yaml's `model` (the Transformer) or `lstm` section; the
vocabulary size comes from the trained BPE. Released weights for pretraining's `init_from` are
gpt1.model.weights's."""

from __future__ import annotations

from typing import Literal

from gpt1.config import Params
from gpt1.errors import UserError
from gpt1.model.lm import LSTMConfig, TransformerConfig

Kind = Literal["transformer", "lstm"]


def model_config(params: Params, kind: Kind, vocab_size: int) -> TransformerConfig | LSTMConfig:
    if kind == "transformer":
        m = params.model
        return TransformerConfig(vocab_size=vocab_size, n_positions=m.n_positions, n_layer=m.n_layer,
                                 n_head=m.n_head, d_model=m.d_model, d_ff=m.d_ff, embd_dropout=m.dropout,
                                 attn_dropout=m.attn_dropout, resid_dropout=m.dropout)
    if kind == "lstm":
        m = params.lstm
        return LSTMConfig(vocab_size=vocab_size, d_embed=m.d_embed, d_hidden=m.d_hidden, n_layer=m.n_layer,
                          dropout=m.dropout)
    raise UserError(f"unknown model kind {kind!r}; use 'transformer' or 'lstm'")
