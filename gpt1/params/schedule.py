"""Pretraining's schedule for one model kind, resolved once from params' `pretrain` section: how many updates, the
warm-up, when the validation loss is measured and the resume state saved, and which checkpoints are kept.

The updates are given as `max_steps`, or as `epochs`, the paper's unit: passes over the tokenized training corpus,
resolved here from the training corpus's token count as ceil(epochs x tokens / tokens_per_update). The count comes in
from the caller: the stages that resolve epochs read data/tokens/meta.json (gpt1/files/tokens_meta.py) and declare
data/tokens; `gpt1 plan` passes an estimate before there is one.

Pretraining trains by it; the params checks, the transfer curve, its figure and the zero-shot analysis read the
same object, so a schedule rule (e.g. a kind's own max_steps) is written here only. The stages that use it list
this module as a dependency: a change to a rule re-runs them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from gpt1.errors import UserError
from gpt1.layout import TOKENS_META


@dataclass(frozen=True)
class PretrainSchedule:
    """Each figure is read from params when asked for, so a stage that asks only for `updates` reads (and declares)
    only the keys that set it."""
    pretrain: Any  # params' `pretrain` section
    kind: str  # a model kind of gpt1/kinds.py
    corpus_tokens: int | None = None  # the training corpus's tokens, for `epochs`; None: not known yet

    @classmethod
    def of(cls, pretrain, kind: str, corpus_tokens: int | None = None) -> "PretrainSchedule":
        return cls(pretrain, kind, corpus_tokens)

    @property
    def updates(self) -> int:
        """A kind trains its own `pretrain.<kind>.max_steps` where set, else pretrain.max_steps, else
        pretrain.epochs over the tokenized corpus; 0: the imported weights as they are, trained no further."""
        if self.from_epochs:  # read first, so that every stage asking for the updates declares pretrain.epochs
            return math.ceil(self.pretrain.epochs * self.training_tokens() / self.pretrain.tokens_per_update)
        return getattr(self.pretrain, self.kind).max_steps or self.pretrain.max_steps

    @property
    def from_epochs(self) -> bool:
        """Whether this kind's updates come from pretrain.epochs (no max_steps of its own or of pretrain)."""
        return self.pretrain.epochs is not None and not getattr(self.pretrain, self.kind).max_steps

    @property
    def pretrains(self) -> bool:
        """Whether this kind trains at all, known before the corpus is tokenized."""
        return bool(getattr(self.pretrain, self.kind).max_steps or self.pretrain.max_steps
                    or self.pretrain.epochs)

    @property
    def known(self) -> bool:
        """Whether `updates` can be resolved now: given as updates, or the corpus's tokens known."""
        return not self.from_epochs or self.corpus_tokens is not None

    def training_tokens(self) -> int:
        if self.corpus_tokens is None:
            raise UserError(f"pretrain.epochs counts updates from the tokenized corpus, and {TOKENS_META} is not "
                            "there yet: run `gpt1 tokenize` first (`gpt1 plan` estimates the count before)")
        return self.corpus_tokens

    @property
    def warmup_updates(self) -> int:
        return self.pretrain.warmup_steps

    @property
    def eval_interval(self) -> int:
        """The validation loss every this many updates, and after the last."""
        return self.pretrain.eval_interval

    @property
    def save_interval(self) -> int:
        """The resume state every this many updates."""
        return self.pretrain.save_interval

    @cached_property  # pretraining asks after every update
    def kept_checkpoints(self) -> tuple[int, ...]:
        """The updates after which a checkpoint is kept: `pretrain.checkpoints` log-spaced, the last included."""
        return tuple(log_spaced_updates(self.updates, self.pretrain.checkpoints))

    @property
    def transfer_points(self) -> tuple[int, ...]:
        """The kept checkpoints a fine-tuning can start from besides the finished model (the transfer curve's steps)."""
        return self.kept_checkpoints[:-1]

    def curve_steps(self, requested: list[int]) -> list[int]:
        """analysis.transfer_curve_steps as the transfer curve trains them: as given with max_steps (the params checks
        hold them to kept checkpoints); with epochs, whose kept checkpoints are known only once the corpus is
        tokenized, the kept checkpoint nearest each on a log scale (each once)."""
        if not self.from_epochs:
            return list(requested)
        points = self.transfer_points
        if not points:
            return []
        nearest = [min(points, key=lambda point: abs(math.log(point) - math.log(step))) for step in requested]
        return sorted(set(nearest))


def log_spaced_updates(updates: int, count: int) -> list[int]:
    """`count` log-spaced update numbers from 1 to `updates` (fewer when rounding makes them collide)."""
    import numpy as np  # late: the params checks import this module

    if updates == 0:
        return []
    if count == 1:
        return [updates]
    return sorted({int(round(step)) for step in np.geomspace(1, updates, count)} | {updates})
