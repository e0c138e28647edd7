"""Params files as YAML: read (UTF-8, a one-line error for bad syntax) and composed, each profile merged over
params.yaml (`gpt1 --profile`, `snakemake --configfile`). gpt1.params.schema validates the result."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import yaml

from gpt1.errors import UserError
from gpt1.files.text_files import read_text

DEFAULT_PARAMS = Path("params.yaml")


def read_yaml(path: Path | str) -> Any:
    path = Path(path)
    if not path.exists():
        raise UserError(f"{path} not found; run from the project root or pass --params PATH")
    try:
        return yaml.safe_load(read_text(path))
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(error, "problem", None) or "cannot parse"
        raise UserError(f"{path} is not valid YAML{where}: {problem}") from None


def merge(base: Any, overlay: Any) -> Any:
    """`overlay` over `base`: mappings merge key by key, anything else (a list too) replaces."""
    if isinstance(base, dict) and isinstance(overlay, dict):
        return {**base, **{key: merge(base.get(key), value) for key, value in overlay.items()}}
    return overlay


def compose_raw(path: Path | str = DEFAULT_PARAMS, profiles: Sequence[Path | str] = ()) -> tuple[Any, str]:
    """params.yaml with each profile merged over it in turn, unvalidated, and a name for error messages."""
    raw = read_yaml(path)
    for profile in profiles:
        overlay = read_yaml(profile)
        if not isinstance(overlay, dict):
            raise UserError(f"{profile}: a profile is a mapping of the params.yaml keys it changes")
        raw = merge(raw, overlay)
    return raw, " + ".join(map(str, [path, *profiles]))
