"""What a setting shapes, declared once beside its type in the schema and read from there by everything that lists
settings: which stages DVC re-runs when it changes, whether a resumed or retried run must match it, whether a model
card records it.

A field carries its role as metadata of its annotation (`Annotated[int, Field(ge=1), Role(...)]`): pydantic keeps
it on the field and validates as before. dvc.yaml's params of a stage (gpt1/pipeline/stage_table.py), fine-tuning's
and pretraining's resume fingerprints (gpt1/train/seed_state.py, gpt1/train/pretrain_settings.py) and the model card
(gpt1/train/model_card.py) are lists of the fields that declare the role, in the schema's order: a setting added to
the schema with its role reaches each of them, and none is kept by hand.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from pydantic import BaseModel

# The stages that fine-tune: the settings a fine-tuning run reads name all three.
FINE_TUNING = ("finetune", "layer-transfer", "transfer-curve")


@dataclass(frozen=True)
class Role:
    """stages: the stage commands whose dvc.yaml params list the setting (a change re-runs them), with `notes`, a
    comment beside it in a stage's list ({stage: note}); resume: a resumed or retried run's fingerprint holds it, so
    saved work from another value is never reused; card: the model card records it. `resume` and `card` are read in
    the sections a run is handed (finetune, pretrain and each model's optimiser); the project seed and the model's
    shape reach both through the run's own settings (its sample seed, its model's config), whole."""

    stages: tuple[str, ...] = ()
    resume: bool = False
    card: bool = False
    notes: tuple[tuple[str, str], ...] = ()

    def note(self, stage: str) -> str | None:
        return dict(self.notes).get(stage)


def role_of(model: type[BaseModel], name: str) -> Role | None:
    """The role field `name` of `model` declares, or None."""
    return next((item for item in model.model_fields[name].metadata if isinstance(item, Role)), None)


def declared(model: type[BaseModel], prefix: str = "") -> Iterator[tuple[str, Role]]:
    """(dotted key, role) of every field of `model` that declares one, and of its sections' fields, in the schema's
    order."""
    for name, field in model.model_fields.items():
        key = f"{prefix}{name}"
        role = role_of(model, name)
        if role is not None:
            yield key, role
        section = field.annotation
        if isinstance(section, type) and issubclass(section, BaseModel):
            yield from declared(section, f"{key}.")


def keys_with(model: type[BaseModel], wanted) -> tuple[str, ...]:
    """The fields of `model` itself (not its sections) whose role satisfies `wanted(role)`, by name."""
    return tuple(name for name in model.model_fields
                 if (role := role_of(model, name)) is not None and wanted(role))
