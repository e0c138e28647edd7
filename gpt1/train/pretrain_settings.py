"""What pretraining one model reads from params.yaml, and what follows from it: micro-batches per update and the
signature a resume checkpoint must match (gpt1/train/pretrain.py trains with them)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from gpt1.files.tokens_meta import training_tokens
from gpt1.params.roles import keys_with
from gpt1.params.schedule import PretrainSchedule
from gpt1.params.schema import LstmParams, Params, PretrainParams, TransformerParams
from gpt1.errors import UserError
from gpt1.kinds import KINDS, LSTM, TRANSFORMER, Kind
from gpt1.model.lm import LSTMConfig, TransformerConfig

# The settings of a run's length, which enter a signature as the schedule resolves them.
LENGTH = ("max_steps", "epochs", "warmup_steps")


@dataclass(frozen=True)
class PretrainSettings:
    """What pretraining one model reads from params.yaml: the `pretrain` section, the model's size (the `model`
    or `lstm` section), the window length (model.n_positions, the LSTM's too) and the project seed, with the
    model's schedule resolved from them."""
    pretrain: PretrainParams
    size: TransformerParams | LstmParams
    n_positions: int
    seed: int
    schedule: PretrainSchedule

    @classmethod
    def of(cls, params: Params, kind: Kind) -> "PretrainSettings":
        sizes = {TRANSFORMER: params.model, LSTM: params.lstm}
        if kind not in sizes:
            raise UserError(f"unknown model kind {kind!r}; use {' or '.join(map(repr, KINDS))}")
        schedule = PretrainSchedule.of(params.pretrain, kind)
        if schedule.from_epochs:  # the corpus's size, read only where it sets the updates
            schedule = PretrainSchedule.of(params.pretrain, kind, training_tokens())
        return cls(params.pretrain, sizes[kind], params.model.n_positions, params.seed, schedule)


def batch_split(p: PretrainParams, length: int, world_size: int) -> tuple[int, int]:
    """(sequences per forward pass, micro-batches per process per update) for `world_size` processes:
    tokens_per_update = micro x n_positions (`length`) x accumulation x processes, with micro the largest number
    of sequences up to pretrain.micro_batch_size that divides each process's share. The same params thus give the
    same updates on 1 or 8 processes; only the order of summing gradients differs."""
    per_process = p.tokens_per_update / (length * world_size)
    if per_process != int(per_process) or per_process < 1:
        raise UserError(
            f"pretrain.tokens_per_update {p.tokens_per_update} is not a whole number of model.n_positions {length} "
            f"token windows for each of {world_size} process(es); make it a multiple of {length * world_size}, or "
            "change pretrain.processes_per_node")
    per_process = int(per_process)
    micro = max(size for size in range(1, min(p.micro_batch_size, per_process) + 1) if per_process % size == 0)
    return micro, per_process // micro


def run_signature(settings: PretrainSettings, kind: Kind, config: TransformerConfig | LSTMConfig,
                  train_tokens: int) -> str:
    """What a resume checkpoint must match: everything that shapes the training trajectory, the pretrain settings
    whose role in the schema says `resume` (gpt1/params/roles.py; not the device, the micro-batch split or
    evaluation settings), and the checkpoint schedule that staged step files follow. The run's length enters as the
    schedule resolves it (epochs or max_steps, each model's own max_steps); only the Transformer reads init_from."""
    p, schedule, own = settings.pretrain, settings.schedule, getattr(settings.pretrain, kind)
    resumed = lambda role: role.resume  # noqa: E731
    trajectory = {**{name: getattr(p, name) for name in keys_with(type(p), resumed)},
                  **{name: getattr(own, name) for name in keys_with(type(own), resumed)}}
    trajectory = {name: value for name, value in trajectory.items() if name not in LENGTH}
    if kind != TRANSFORMER:
        trajectory["init_from"] = None
    return json.dumps({"kind": kind, "config": config.__dict__, "seed": settings.seed, "train_tokens": train_tokens,
                       **trajectory, "max_steps": schedule.updates, "warmup_steps": schedule.warmup_updates},
                      sort_keys=True)
