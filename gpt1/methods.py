"""Table 5's methods, each in one entry: how its fine-tuning starts and trains, what it means, and its finding (the
paper's Table 5 row, where it has one, is gpt1/paper.py's).

`finetune.methods` in params.yaml names entries of METHODS (the order of Table 5's rows is this mapping's
order). Adding an entry is all a new method needs: the finetune stage builds its starting model and objective
from it, model cards describe it, evaluation scores it and the ablation puts it in Table 5 with its interval
against `full` and a finding. Plain data: importing this module costs nothing (the params schema validates names
with it).

A fine-tuning job resolves its method once, at its start (`resolve`): the name becomes one `ResolvedMethod` (its
starting weights, λ, learning rate and the key it came from, model card line) that the library is handed;
nothing below the stage looks a method up by name.

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
    lr_key: str = "finetune.lr"  # a finetune key holding its rate; when that key is null, finetune.lr
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
                          starts_from=None, auxiliary_lm=True, lr_key="finetune.no_pretrain_lr",
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
    lr: float
    lr_key: str  # the params key `lr` came from (a divergence names it)

    @property
    def pretrained(self) -> bool:
        return self.starts_from is not None


def resolve(name: str, finetune) -> ResolvedMethod:
    """Method `name` with its λ and learning rate from `finetune` (params' section). The rate is the method's own
    key where set, else finetune.lr: the randomly initialised Transformer has its own, chosen on dev like `lr`,
    so Table 5 compares each method at its best."""
    entry = method(name)
    own = getattr(finetune, entry.lr_key.removeprefix("finetune."))
    lr, lr_key = (own, entry.lr_key) if own is not None else (finetune.lr, "finetune.lr")
    return ResolvedMethod(name=name, starts_from=entry.starts_from, meaning=entry.meaning,
                          lm_coef=finetune.lm_coef if entry.auxiliary_lm else 0.0, lr=lr, lr_key=lr_key)
