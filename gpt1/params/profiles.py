"""Profiles: files that hold only the params.yaml keys they change, applied with each tool's own mechanism.

- the gpt1 CLI: `gpt1 --profile profiles/paper.yaml <stage>` (several compose, later ones win);
- Snakemake: `snakemake --configfile profiles/paper.yaml` (the Snakefile hands the same files to gpt1);
- DVC: `dvc exp run -S key=value ...`, one override per changed key, so that `dvc exp show` compares the
  profiles as experiments. `gpt1 profile profiles/paper.yaml` prints that command line; `--yaml` prints the
  composed parameter file instead (for a plain `dvc repro`, write it to params.yaml).
"""

from __future__ import annotations

import math
import re
import shlex
from pathlib import Path
from typing import Any, Sequence

import yaml

from gpt1.params.schema import load_params
from gpt1.params.files import DEFAULT_PARAMS, compose_raw, merge, read_yaml
from gpt1.errors import UserError

_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*")  # a string Hydra reads back as itself, unquoted
_KEYWORDS = {"null", "true", "false", "nan", "inf"}


def hydra_value(value: Any) -> str:
    """`value` in the override grammar that `dvc exp run -S` parses (Hydra's): strings quoted, lists and
    mappings in flow style, no spaces, so that one override stays one shell word."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise UserError(f"{value} cannot be passed to `dvc exp run -S`; use a finite number")
        return repr(value)
    if isinstance(value, str):
        if _PLAIN.fullmatch(value) and value.lower() not in _KEYWORDS:
            return value
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(value, list):
        return "[" + ",".join(hydra_value(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{key}:{hydra_value(item)}" for key, item in value.items()) + "}"
    raise UserError(f"a profile value of type {type(value).__name__} ({value!r}) has no -S form")


def set_overrides(base: dict, overlay: dict, prefix: str = "") -> list[str]:
    """`-S key=value` arguments that turn `base` into base + overlay, one per changed leaf; a key that `base`
    lacks (in a free-form mapping such as data.local_paths) takes Hydra's `+key=` form."""
    arguments = []
    for key, value in overlay.items():
        dotted, current = f"{prefix}{key}", base.get(key)
        if isinstance(value, dict) and isinstance(current, dict):
            arguments += set_overrides(current, value, dotted + ".")
        elif key not in base or value != current:
            arguments += ["-S", f"{'' if key in base else '+'}{dotted}={hydra_value(value)}"]
    return arguments


def dvc_exp_run_command(profiles: Sequence[Path], params: Path = DEFAULT_PARAMS) -> list[str]:
    """`dvc exp run -S ...` that applies `profiles` (validated together first) to `params`."""
    load_params(params, profiles)
    overlay: dict = {}
    for profile in profiles:
        overlay = merge(overlay, read_yaml(profile))
    return ["dvc", "exp", "run", *set_overrides(read_yaml(params), overlay)]


def describe(profiles: Sequence[Path], params: Path = DEFAULT_PARAMS, as_yaml: bool = False) -> str:
    """What `gpt1 profile` prints: the shell-quoted `dvc exp run` line, or the composed parameters as YAML."""
    if as_yaml:
        load_params(params, profiles)
        return yaml.safe_dump(compose_raw(params, profiles)[0], sort_keys=False)
    return shlex.join(dvc_exp_run_command(profiles, params))
