"""Which analyses a run's params leave nothing to compute for, and why, worded here once.

Released weights used as they are (pretrain.max_steps 0 with pretrain.init_from: profiles/released.yaml) mean
nothing is pretrained here: the LSTM has no released weights, and no pretraining checkpoints are kept. The stages
that would read them still run, so that `dvc repro` and Snakemake complete; each writes its declared outputs as an
explicit "not applicable: <why>" result with the reason given here. The params checks
(gpt1/params/schema.py) refuse the requests that cannot be honoured instead: Table 5's `lstm` row without an LSTM.
"""

from __future__ import annotations

from gpt1.kinds import KINDS, TRANSFORMER
from gpt1.params.schedule import PretrainSchedule

NOT_APPLICABLE = "not applicable"


def unpretrained(pretrain, kind: str) -> str | None:
    """Why `kind` (gpt1/kinds.py) has no model in this run, or None when it has one (pretrained here, or the
    Transformer's init_from weights)."""
    released = pretrain.init_from  # read in every run, not only where nothing is pretrained: the stages declare it
    if PretrainSchedule.of(pretrain, kind).pretrains or (kind == TRANSFORMER and released):
        return None
    return (f"the {kind} has no released weights and pretrain.max_steps is 0 (released weights used as they are, "
            f"nothing pretrained here); give it updates of its own with pretrain.{kind}.max_steps")


def transfer_curve(params) -> str | None:
    """Why the transfer curve (fine-tuning from earlier pretraining checkpoints) has nothing to run, or None."""
    if params.analysis.transfer_curve_steps:
        return None
    if not PretrainSchedule.of(params.pretrain, TRANSFORMER).pretrains:
        return ("the transfer curve fine-tunes from checkpoints kept during pretraining, and released weights "
                "used as they are (pretrain.max_steps 0) come without any (analysis.transfer_curve_steps is empty)")
    return "analysis.transfer_curve_steps is empty: no pretraining checkpoint is fine-tuned from"


def zero_shot(pretrain) -> str | None:
    """Why zero-shot over pretraining checkpoints has no curve to draw, or None: no model is pretrained here."""
    if any(PretrainSchedule.of(pretrain, kind).pretrains for kind in KINDS):
        return None
    return ("zero-shot scores follow a model over its pretraining checkpoints, and nothing is pretrained here "
            "(pretrain.max_steps 0: released weights used as they are)")


def scored_kinds(pretrain) -> list[str]:
    """The kinds of model the zero-shot analysis scores: those this run has."""
    return [kind for kind in KINDS if unpretrained(pretrain, kind) is None]
