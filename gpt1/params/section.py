"""The base of every params.yaml section's schema (gpt1/params/schema.py, gpt1/params/user_data.py)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Section(BaseModel):
    # extra="forbid" turns a misspelt key into an error instead of a silently ignored knob.
    # allow_inf_nan=False: `.inf` or `.nan` where a number is meant (weight_decay, grad_clip, lm_coef, ...).
    model_config = ConfigDict(extra="forbid", frozen=True, strict=False, allow_inf_nan=False)
