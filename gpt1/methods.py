"""Table 5's methods as a fine-tuning job trains them. Each method is an entry of params.yaml's `methods` section
(its row label, its meaning, the pretrained model it starts from, whether it has the auxiliary LM, its own rate,
its finding; gpt1/params/method_section.py validates it), and `finetune.methods` names the entries the pipeline
runs, in Table 5's order. What varies between methods is that data; this module keeps the behaviour they share.

Adding a method is an entry in `methods` and its name in `finetune.methods` (or `dvc exp run -S` of both): each
fine-tuning job lists its own method's entry as its params, so the new method's jobs and the analysis run, and no
other job. A job resolves its method once, at its start (`resolve`): the name becomes one `ResolvedMethod` (its
starting weights, λ, learning rate and the params key it came from, model card line) that the library is handed.

"Method" is the one word for these: in code, params, commands (`--method`), dvc.yaml and every file the pipeline
writes (scores.csv's `method` column, the starting-model records, the model cards).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from gpt1.errors import UserError
from gpt1.kinds import Kind

# The two methods other code reads by name. FULL is the paper's model, the one Table 5 sets every other method
# against: Figure 2's all-blocks point and the transfer curve's last point are its runs. NO_PRETRAIN is the same
# Transformer randomly initialised: the transfer curve's zero point (no pretraining updates).
FULL = "full"
NO_PRETRAIN = "no_pretrain"


def method(name: str, methods: dict):
    """The entry `name` of params' `methods` section, or one error listing the entries."""
    if name not in methods:
        raise UserError(f"unknown fine-tuning method {name!r}; use one of {', '.join(methods)} (Table 5's methods "
                        "are the entries of params.yaml's `methods` section)")
    return methods[name]


def comparison(name: str, methods: dict) -> str:
    """How Table 5's findings name full − method `name`: its entry's `finding`, or "full − <label>"."""
    entry = method(name, methods)
    return entry.finding or f"{FULL} − {entry.label}"


@dataclass(frozen=True)
class ResolvedMethod:
    """One method as a fine-tuning job trains it, resolved once from its entry and params' `finetune` section."""
    name: str
    starts_from: Optional[Kind]  # the pretrained model it loads; None: a fresh Transformer
    meaning: str  # the model card's line
    lm_coef: float  # λ of L3 = L2 + λ·L1
    lr: float
    rate_key: str  # the params key `lr` came from (a card and a divergence name it)

    @property
    def pretrained(self) -> bool:
        return self.starts_from is not None


def resolve(name: str, params) -> ResolvedMethod:
    """Method `name` with its λ and learning rate, from params' `methods` and `finetune` sections: its entry's own
    rate where set, else finetune.lr (the randomly initialised Transformer has its own, so Table 5 compares each
    method at its best)."""
    entry, finetune = method(name, params.methods), params.finetune
    own = entry.lr is not None
    return ResolvedMethod(name=name, starts_from=entry.starts_from, meaning=entry.meaning,
                          lm_coef=finetune.lm_coef if entry.auxiliary_lm else 0.0,
                          lr=entry.lr if own else finetune.lr, rate_key=f"methods.{name}.lr" if own else "finetune.lr")
