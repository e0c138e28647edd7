"""A fresh model's configuration, sized by a section of params.yaml: `model` (the Transformer) or `lstm`; the
vocabulary size comes from the trained BPE. Released weights for pretraining's `init_from` are
gpt1.model.weights's."""

from __future__ import annotations

from gpt1.params.schema import LstmParams, TransformerParams
from gpt1.model.lm import LSTMConfig, TransformerConfig


def model_config(size: TransformerParams | LstmParams, vocab_size: int) -> TransformerConfig | LSTMConfig:
    """The configuration of a model sized by `size` (params' `model` or `lstm` section)."""
    if isinstance(size, TransformerParams):
        return TransformerConfig(vocab_size=vocab_size, n_positions=size.n_positions, n_layer=size.n_layer,
                                 n_head=size.n_head, d_model=size.d_model, d_ff=size.d_ff, embd_dropout=size.dropout,
                                 attn_dropout=size.attn_dropout, resid_dropout=size.dropout)
    if isinstance(size, LstmParams):
        return LSTMConfig(vocab_size=vocab_size, d_embed=size.d_embed, d_hidden=size.d_hidden, n_layer=size.n_layer,
                          dropout=size.dropout)
    raise TypeError(f"no model is sized by {type(size).__name__}; pass params' `model` or `lstm` section")
