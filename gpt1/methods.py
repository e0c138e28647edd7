"""Table 5's methods, each in one entry: how its fine-tuning starts and trains, what it means, and its finding (the
paper's Table 5 row, where it has one, is gpt1/paper.py's).

`finetune.methods` in params.yaml names entries of METHODS (the order of Table 5's rows is this mapping's
order). Adding an entry is all a new method needs: the finetune stage builds its starting model and objective
from it, model cards describe it, evaluation scores it and the ablation puts it in Table 5 with its interval
against `full` and a finding. Plain data: importing this module costs nothing (the params schema validates names
with it).

A fine-tuning job resolves its method once, at its start (`resolve`): the name becomes one `ResolvedMethod` (its
starting weights, λ, learning rate, model card line) that the library is handed; a message or card that names the
rate's params key asks `rate_key`.

"Method" is the one word for these: in code, params, commands (`--method`), dvc.yaml and every file the pipeline
writes (scores.csv's `method` column, the starting-model records, the model cards).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from gpt1.errors import UserError
from gpt1.kinds import LSTM, TRANSFORMER, Kind


@dataclass(frozen=True)
class Method:
    label: str  # Table 5's row name
    meaning: str  # one line for the model card
    starts_from: Optional[Kind]  # the pretrained model it loads; None: a fresh Transformer
    auxiliary_lm: bool  # λ = finetune.lm_coef, or 0 (no auxiliary objective)
    # A rate of its own, chosen on dev like finetune.lr: the key finetune.<name>_lr, which the params schema
    # declares for it (null there: finetune.lr).
    own_rate: bool = False
    # How Table 5's findings name the comparison full − this method ("": "full − <label>").
    finding: str = ""
    # The paper's claim about it depends on the data set's size (the auxiliary LM helps the larger ones): its
    # finding gives every task's interval and tests the claim, instead of the average alone.
    finding_by_size: bool = False


# The two methods other code reads by name. FULL is the paper's model, the one Table 5 sets every other method
# against: Figure 2's all-blocks point and the transfer curve's last point are its runs. NO_PRETRAIN is the same
# Transformer randomly initialised: the transfer curve's zero point (no pretraining updates).
FULL = "full"
NO_PRETRAIN = "no_pretrain"

METHODS: dict[str, Method] = {
    FULL: Method("Transformer w/ aux LM (full)",
                   "pretrained Transformer, auxiliary LM objective (λ = finetune.lm_coef)",
                   starts_from=TRANSFORMER, auxiliary_lm=True),
    NO_PRETRAIN: Method("Transformer w/o pre-training",
                          "Transformer of the same size, randomly initialised, auxiliary LM objective",
                          starts_from=None, auxiliary_lm=True, own_rate=True,
                          finding="Pre-training: full − w/o pre-training"),
    "no_aux_lm": Method("Transformer w/o aux LM", "pretrained Transformer, no auxiliary LM objective (λ = 0)",
                        starts_from=TRANSFORMER, auxiliary_lm=False,
                        finding="Auxiliary LM: full − w/o aux LM", finding_by_size=True),
    "lstm": Method("LSTM w/ aux LM", "pretrained LSTM, auxiliary LM objective", starts_from=LSTM,
                   auxiliary_lm=True, finding="Architecture: Transformer − LSTM"),
}


def method(name: str) -> Method:
    """The registered method `name`, or one error listing the registered ones."""
    if name not in METHODS:
        raise UserError(f"unknown fine-tuning method {name!r}; use one of {', '.join(METHODS)} "
                        "(Table 5's methods are registered in gpt1/methods.py)")
    return METHODS[name]


@dataclass(frozen=True)
class ResolvedMethod:
    """One method as a fine-tuning job trains it, resolved once from its name and params' `finetune` section."""
    name: str
    starts_from: Optional[Kind]  # the pretrained model it loads; None: a fresh Transformer
    meaning: str  # the model card's line
    lm_coef: float  # λ of L3 = L2 + λ·L1
    lr: float  # `rate_key` says which params key it came from

    @property
    def pretrained(self) -> bool:
        return self.starts_from is not None


def own_rate_key(name: str) -> str:
    """The finetune key of method `name`'s own rate (for a method whose entry has `own_rate`)."""
    return f"{name}_lr"


def rate_key(name: str, finetune) -> str:
    """The params key method `name` takes its rate from in `finetune` (params' section): its own where set, else
    finetune.lr. The randomly initialised Transformer has its own, so Table 5 compares each method at its best."""
    own = method(name).own_rate and getattr(finetune, own_rate_key(name)) is not None
    return f"finetune.{own_rate_key(name)}" if own else "finetune.lr"


def resolve(name: str, finetune) -> ResolvedMethod:
    """Method `name` with its λ and learning rate from `finetune` (params' section)."""
    entry = method(name)
    lr = getattr(finetune, rate_key(name, finetune).removeprefix("finetune."))
    return ResolvedMethod(name=name, starts_from=entry.starts_from, meaning=entry.meaning,
                          lm_coef=finetune.lm_coef if entry.auxiliary_lm else 0.0, lr=lr)
