"""The pipeline's stages as dvc.yaml declares them, resolved for a set of parameters.

dvc.yaml is the one declaration of the DAG: DVC reads it itself, and workflow/Snakefile builds one rule per
resolved stage from this module, so the two tools cannot drift apart. Resolution follows DVC's rules for
the parts dvc.yaml uses: `foreach` over a mapping (`${key}`, `${item}`), `matrix` (`${item.<name>}`,
stages named `<stage>@<value>-<value>`), `${dotted.param}` from the parameters (a whole-string reference
keeps the value's type, e.g. a list for a matrix), and outputs under `outs`, `metrics` and `plots`.
tests/test_dag.py checks that the result equals DVC's own resolution.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gpt1.errors import UserError

_REFERENCE = re.compile(r"\$\{\s*([^${}]+?)\s*\}")
TRAINING_COMMANDS = ("pretrain", "finetune", "layer-transfer")  # they use every core, and a GPU where present


@dataclass(frozen=True)
class Stage:
    name: str  # DVC's address, e.g. "finetune@sts_b-full"
    command: str
    deps: tuple[str, ...]
    outs: tuple[str, ...]  # outs, metrics and plots
    params: tuple[str, ...]  # dotted params.yaml keys

    @property
    def verb(self) -> str:
        """The gpt1 subcommand the stage runs."""
        return self.command.split()[1]

    @property
    def trains(self) -> bool:
        return self.verb in TRAINING_COMMANDS


def lookup(values: dict, dotted: str) -> Any:
    current: Any = values
    for part in dotted.split("."):
        if not isinstance(current, dict) or part not in current:
            raise UserError(f"dvc.yaml refers to '{dotted}', which the parameters do not have")
        current = current[part]
    return current


def interpolate(value: Any, context: dict) -> Any:
    """`${...}` references replaced from `context`, innermost first (`pretrain.${key}` works)."""
    if isinstance(value, list):
        return [interpolate(item, context) for item in value]
    if isinstance(value, dict):
        return {interpolate(key, context): interpolate(item, context) for key, item in value.items()}
    if not isinstance(value, str):
        return value
    whole = _REFERENCE.fullmatch(value)
    if whole:
        return lookup(context, whole.group(1))
    return _REFERENCE.sub(lambda match: str(lookup(context, match.group(1))), value)


def _paths(entries: list) -> list[str]:
    """Paths of a deps/outs/metrics/plots list, whose entries are a path or {path: options}."""
    return [next(iter(entry)) if isinstance(entry, dict) else entry for entry in entries or []]


def _stage(name: str, body: dict, context: dict) -> Stage:
    body = interpolate(body, context)
    outs = [path for field in ("outs", "metrics", "plots") for path in _paths(body.get(field))]
    return Stage(name=name, command=body["cmd"], deps=tuple(_paths(body.get("deps"))), outs=tuple(outs),
                 params=tuple(body.get("params") or ()))


def _instances(name: str, declared: dict, params: dict) -> list[Stage]:
    if "foreach" in declared:
        items = interpolate(declared["foreach"], params)
        pairs = items.items() if isinstance(items, dict) else ((item, item) for item in items)
        return [_stage(f"{name}@{key}", declared["do"], {**params, "key": key, "item": item}) for key, item in pairs]
    if "matrix" in declared:
        axes = {axis: interpolate(values, params) for axis, values in declared["matrix"].items()}
        combos = [dict(zip(axes, values)) for values in itertools.product(*axes.values())]
        body = {key: value for key, value in declared.items() if key != "matrix"}
        return [_stage(f"{name}@{'-'.join(map(str, combo.values()))}", body, {**params, "item": combo})
                for combo in combos]
    return [_stage(name, declared, params)]


def resolve(dvc_yaml: Path | str, params: dict) -> list[Stage]:
    """Every stage of `dvc_yaml`, foreach/matrix expanded, for the parameter values `params`."""
    declared = yaml.safe_load(Path(dvc_yaml).read_text())["stages"]
    return [stage for name, body in declared.items() for stage in _instances(name, body, params)]


def inputs(stage: Stage, stages: list[Stage]) -> list[str]:
    """A stage's dependencies as files a scheduler can build: a folder that several stages write into
    (DVC depends on results/finetune) becomes the outputs those stages put there."""
    produced = [out for other in stages for out in other.outs]
    expanded = []
    for dep in stage.deps:
        inside = [out for out in produced if out.startswith(dep.rstrip("/") + "/")]
        expanded += inside if inside and dep not in produced else [dep]
    return expanded


def is_folder(path: str) -> bool:
    """Outputs without a file extension are folders in this pipeline (data/raw, results/finetune/t/v, ...)."""
    return Path(path).suffix == ""


def param_values(stage: Stage, params: dict) -> dict[str, Any]:
    """The values of the params a stage lists, keyed so that Snakemake accepts them as names."""
    return {key.replace(".", "__"): lookup(params, key) for key in stage.params}


def rule_name(stage: Stage) -> str:
    return re.sub(r"\W", "_", stage.name)
