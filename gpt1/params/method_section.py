"""One entry of params.yaml's `methods` section: a Table 5 method as data (gpt1/methods.py resolves it for a job).

Each field declares the stages that read it (gpt1/params/roles.py). A fine-tuning job reads its own method's
training fields, so dvc.yaml lists `methods.<its method>.<field>` for those (gpt1/pipeline/stage_table.py); the
table's fields (label, finding) are read by the stages that write Table 5, which list the section whole.
"""

from __future__ import annotations

from typing import Annotated, Optional

from pydantic import Field

from gpt1.kinds import Kind
from gpt1.params.roles import FINE_TUNING, Role, role_of
from gpt1.params.section import Section

STARTS = Role(stages=(*FINE_TUNING, "starting-model"))
TRAINS = Role(stages=FINE_TUNING)


class MethodParams(Section):
    label: str = Field(min_length=1, description="Table 5's row name")
    meaning: Annotated[str, TRAINS] = Field(min_length=1, description="one line for the model card")
    starts_from: Annotated[Optional[Kind], STARTS] = Field(
        description="the pretrained model it loads (transformer, lstm); null: a fresh Transformer of model's shape")
    auxiliary_lm: Annotated[bool, TRAINS] = Field(description="λ = finetune.lm_coef; false: 0, no auxiliary LM")
    lr: Annotated[Optional[float], TRAINS] = Field(
        gt=0, lt=1, description="a rate of its own, chosen on dev like finetune.lr; null: finetune.lr")
    finding: str = Field(description="how Table 5's findings name full − this method (\"\": full − <label>)")
    finding_by_size: bool = Field(
        description="the paper's claim about it depends on the data set's size (the auxiliary LM helps the larger "
        "ones): its finding gives every task's interval and tests the claim, instead of the average alone")


def job_keys(stage: str, name: str) -> tuple[str, ...]:
    """The keys of method `name`'s entry that a job of `stage` reads (`name` may be DVC's placeholder)."""
    return tuple(f"methods.{name}.{field}" for field in MethodParams.model_fields
                 if (role := role_of(MethodParams, field)) is not None and stage in role.stages)
