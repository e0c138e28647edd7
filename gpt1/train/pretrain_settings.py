"""What pretraining one model reads from params.yaml, and what follows from it: micro-batches per update and the
signature a resume checkpoint must match (gpt1/train/pretrain.py trains with them)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

from gpt1.config import LstmParams, Params, PretrainParams, TransformerParams
from gpt1.errors import UserError
from gpt1.layout import training_updates
from gpt1.model.lm import LSTMConfig, TransformerConfig

Kind = Literal["transformer", "lstm"]


@dataclass(frozen=True)
class Settings:
    """What pretraining one model reads from params.yaml: the `pretrain` section, the model's size (the `model`
    or `lstm` section), the window length (model.n_positions, the LSTM's too) and the project seed."""
    pretrain: PretrainParams
    size: TransformerParams | LstmParams
    n_positions: int
    seed: int

    @classmethod
    def of(cls, params: Params, kind: Kind) -> "Settings":
        sizes = {"transformer": params.model, "lstm": params.lstm}
        if kind not in sizes:
            raise UserError(f"unknown model kind {kind!r}; use 'transformer' or 'lstm'")
        return cls(params.pretrain, sizes[kind], params.model.n_positions, params.seed)


def accumulation_steps(p: PretrainParams, length: int, world_size: int) -> int:
    """Micro-batches per process per update: tokens_per_update = micro x n_positions (`length`) x this x world."""
    per_pass = p.micro_batch_size * length * world_size
    if p.tokens_per_update % per_pass:
        raise UserError(
            f"pretrain.tokens_per_update {p.tokens_per_update} is not divisible by micro_batch_size "
            f"{p.micro_batch_size} x model.n_positions {length} x {world_size} process(es) = {per_pass}; "
            f"make it a multiple of {per_pass}")
    return p.tokens_per_update // per_pass


def run_signature(settings: Settings, kind: Kind, config: TransformerConfig | LSTMConfig, train_tokens: int) -> str:
    """What a resume checkpoint must match: everything that shapes the training trajectory (not the device,
    the micro-batch split or evaluation settings), and the checkpoint schedule that staged step files follow."""
    p = settings.pretrain
    return json.dumps({
        "kind": kind, "config": config.__dict__, "seed": settings.seed, "train_tokens": train_tokens,
        "tokens_per_update": p.tokens_per_update, "max_steps": training_updates(p, kind), "warmup_steps": p.warmup_steps,
        "betas": list(p.betas), "eps": p.eps, "weight_decay": p.weight_decay, "grad_clip": p.grad_clip,
        "max_lr": getattr(p, kind).max_lr, "init_from": p.init_from if kind == "transformer" else None,
        "checkpoints": p.checkpoints,  # the staged step files follow this schedule
    }, sort_keys=True)
