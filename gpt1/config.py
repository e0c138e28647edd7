"""params.yaml -> typed, validated configuration.

Every stage starts by loading params.yaml through `load_params`; a misspelt key, a wrong type or an
out-of-range value stops it with one line naming the key and what is allowed. Code reads typed
attributes (`params.bpe.merges`), never raw dict keys.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from gpt1.errors import UserError

DEFAULT_PARAMS = Path("params.yaml")


class Section(BaseModel):
    # extra="forbid" turns a misspelt key into an error instead of a silently ignored knob.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=False)


class DataParams(Section):
    corpus: list[str] = Field(min_length=1, description="corpus parts for pretraining (see gpt1/registry.py)")
    tasks: list[str] = Field(min_length=1, description="fine-tuning tasks (see gpt1/registry.py)")
    corpus_val_fraction: float = Field(gt=0, lt=0.5)
    task_dev_fraction: float = Field(gt=0, lt=0.5)
    task_test_fraction: float = Field(gt=0, lt=0.5)
    min_dedup_chars: int = Field(ge=0, description="paragraphs at least this long are deduplicated")
    local_paths: dict[str, Optional[str]] = Field(default_factory=dict)

    @field_validator("corpus", "tasks")
    @classmethod
    def _known_and_unique(cls, names: list[str], info) -> list[str]:
        from gpt1 import registry  # late: the registry imports loaders, which import this package

        known = registry.CORPORA if info.field_name == "corpus" else registry.TASKS
        for name in names:
            if name not in known:
                raise ValueError(f"unknown name '{name}'; allowed: {', '.join(sorted(known))}")
        if len(set(names)) != len(names):
            raise ValueError("names must not repeat")
        return names


class BpeParams(Section):
    merges: int = Field(ge=1, le=65_000, description="number of BPE merges (40,000 in the paper)")


class Params(Section):
    seed: int = Field(ge=0)
    data: DataParams
    bpe: BpeParams


def _format_error(error: ValidationError, source: str) -> str:
    first = error.errors()[0]
    key = ".".join(str(part) for part in first["loc"]) or "(top level)"
    kind = first["type"]
    if kind == "extra_forbidden":
        return f"{source}: unknown key '{key}'; remove it or fix its spelling"
    if kind == "missing":
        return f"{source}: missing key '{key}'"
    message = first["msg"].removeprefix("Value error, ")
    return f"{source}: bad value for '{key}' ({first.get('input')!r}): {message}"


def parse_params(raw: Any, source: str = "params") -> Params:
    """Validate a parsed params mapping (used by the CLI and by the Snakefile)."""
    if not isinstance(raw, dict):
        raise UserError(f"{source}: expected a mapping of sections at the top level")
    try:
        return Params.model_validate(raw)
    except ValidationError as error:
        raise UserError(_format_error(error, source)) from None


def load_params(path: Path | str = DEFAULT_PARAMS) -> Params:
    path = Path(path)
    if not path.exists():
        raise UserError(f"{path} not found; run from the project root or pass --params PATH")
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as error:
        raise UserError(f"{path} is not valid YAML: {error}") from None
    return parse_params(raw, str(path))
