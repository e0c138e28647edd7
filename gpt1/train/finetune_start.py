"""A fine-tuning run's starting model: the method's (Table 5), some blocks re-initialised (Figure 2, left), or an
earlier pretraining checkpoint (the transfer curve), and the context its inputs are cut to. Building a model draws
from the global torch RNG: seed it first."""

from __future__ import annotations

from pathlib import Path

from gpt1.errors import UserError
from gpt1.kinds import TRANSFORMER
from gpt1.layout import kept_checkpoints, pretrained_model, pretraining_checkpoint
from gpt1.methods import ResolvedMethod
from gpt1.model.lm import GPT1, LanguageModel, build_model, load_model
from gpt1.params.schema import TransformerParams
from gpt1.train.model_configs import model_config


def language_model(method: ResolvedMethod, vocab_size: int, pretrain_dir: Path, fresh: TransformerParams,
                   transfer_layers: int | None = None, pretrain_step: int | None = None) -> LanguageModel:
    """The method's starting model: its final pretrained weights or, with
    `pretrain_step`, the checkpoint kept after that update; a method with no pretrained model gets a fresh
    Transformer sized by `fresh` (params' `model` section). Uses the global torch RNG: seed it first."""
    starts_from = method.starts_from
    if starts_from is None:
        if transfer_layers is not None or pretrain_step is not None:
            raise UserError(f"transfer_layers and pretrain_step need pretrained weights; {method.name!r} starts from "
                            "random weights")
        return build_model(TRANSFORMER, model_config(fresh, vocab_size))
    model = pretrained(starting_weights(method, pretrain_dir, pretrain_step), vocab_size)
    if transfer_layers is not None:
        if starts_from != TRANSFORMER:
            raise UserError(f"transfer_layers applies to methods that start from the pretrained Transformer, "
                            f"not {method.name!r}")
        reinitialise_blocks(model, transfer_layers)
    return model


def starting_weights(method: ResolvedMethod, pretrain_dir: Path, pretrain_step: int | None = None) -> Path | None:
    """The file of pretrained weights a run of `method` loads (with `pretrain_step`, the checkpoint kept after that
    update); None for a method that starts from random weights."""
    if method.starts_from is None:
        return None
    return pretrained_model(method.starts_from, pretrain_dir) if pretrain_step is None \
        else checkpoint_path(method.starts_from, pretrain_step, pretrain_dir)


def checkpoint_path(kind: str, step: int, pretrain_dir: Path) -> Path:
    """The kept checkpoint after pretraining update `step`, or one error naming the steps that were kept."""
    path = pretraining_checkpoint(kind, step, pretrain_dir)
    if not path.is_file():
        kept = sorted(kept_checkpoints(path.parent))
        raise UserError(f"{path} not found: the {kind} pretraining kept checkpoints after updates {kept} "
                        "(pretrain.checkpoints, log-spaced); choose one of them")
    return path


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


def context_length(model: LanguageModel, transformer: TransformerParams) -> int:
    """The Transformer's positions; the LSTM gets the inputs of the Transformer it is compared with (params'
    `model` section: read only for the LSTM, so the stages that fine-tune only the Transformer do not depend on it)."""
    return model.config.n_positions if model.kind == TRANSFORMER else transformer.n_positions
