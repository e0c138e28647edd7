"""The pipeline's stages as dvc.yaml declares them, resolved for a set of parameters.

dvc.yaml (written from gpt1/pipeline/stage_table.py) is the DAG as DVC reads it, and workflow/Snakefile builds one
rule per resolved stage from this module, so the two tools cannot drift apart. Resolution follows DVC's rules for
the parts dvc.yaml uses: `foreach` over a mapping (`${key}`, `${item}`), `matrix` (`${item.<name>}`,
stages named `<stage>@<value>-<value>`), `${dotted.param}` from the parameters (a whole-string reference
keeps the value's type, e.g. a list for a matrix), and outputs under `outs`, `metrics` and `plots`.
tests/test_dag.py checks that the result equals DVC's own resolution.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gpt1.errors import UserError
from gpt1.layout import CODE_FINGERPRINTS
from gpt1.pipeline.stage_table import STAGES, StageSpec, command_of, job_log

_REFERENCE = re.compile(r"\$\{\s*([^${}]+?)\s*\}")


@dataclass(frozen=True)
class Stage:
    name: str  # DVC's address, e.g. "finetune@full"
    command: str
    deps: tuple[str, ...]
    outs: tuple[str, ...]  # outs, metrics and plots
    params: tuple[str, ...]  # dotted params.yaml keys
    # Outputs declared `persist: true`: left in place while the stage runs, and as they were if it fails (DVC does
    # not remove them first; Snakemake's `update()` backs them up and restores them).
    kept: tuple[str, ...] = ()

    @property
    def declared(self) -> str:
        """The name dvc.yaml declares it under (`finetune` for `finetune@full`)."""
        return self.name.split("@")[0]

    @property
    def verb(self) -> str:
        """The gpt1 subcommand the stage runs."""
        return self.command.split()[1]


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


def _persisted(entries: list) -> list[str]:
    return [path for entry in entries or [] if isinstance(entry, dict)
            for path, options in entry.items() if (options or {}).get("persist")]


def _stage(name: str, body: dict, context: dict) -> Stage:
    body = interpolate(body, context)
    fields = [body.get(field) for field in ("outs", "metrics", "plots")]
    return Stage(name=name, command=body["cmd"], deps=tuple(_paths(body.get("deps"))),
                 outs=tuple(path for entries in fields for path in _paths(entries)),
                 params=tuple(body.get("params") or ()),
                 kept=tuple(path for entries in fields for path in _persisted(entries)))


def _instances(name: str, declared: dict, params: dict) -> list[tuple[tuple[str, ...], Stage]]:
    """(wildcard values, stage) for each instance of a declared stage."""
    if "foreach" in declared:
        items = interpolate(declared["foreach"], params)
        pairs = items.items() if isinstance(items, dict) else ((item, item) for item in items)
        return [((str(key),), _stage(f"{name}@{key}", declared["do"], {**params, "key": key, "item": item}))
                for key, item in pairs]
    if "matrix" in declared:
        axes = {axis: interpolate(values, params) for axis, values in declared["matrix"].items()}
        combos = [dict(zip(axes, values)) for values in itertools.product(*axes.values())]
        body = {key: value for key, value in declared.items() if key != "matrix"}
        return [(tuple(map(str, combo.values())),
                 _stage(f"{name}@{'-'.join(map(str, combo.values()))}", body, {**params, "item": combo}))
                for combo in combos]
    return [((), _stage(name, declared, params))]


def resolve(dvc_yaml: Path | str, params: dict) -> list[Stage]:
    """Every stage of `dvc_yaml`, foreach/matrix expanded, for the parameter values `params`."""
    declared = yaml.safe_load(Path(dvc_yaml).read_text())["stages"]
    return [stage for name, body in declared.items() for _, stage in _instances(name, body, params)]


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
    """Outputs without a file extension are folders in this pipeline (data/raw, results/finetune/full, ...)."""
    return Path(path).suffix == ""


@dataclass(frozen=True)
class Template:
    """One declared stage as one rule with wildcards: `foreach` gives the wildcard `key`, `matrix` one per
    axis. Paths hold `{name}`, the command `{wildcards.name}` (Snakemake's spellings)."""

    name: str
    command: str
    deps: tuple[str, ...]
    outs: tuple[str, ...]
    kept: tuple[str, ...]  # the outputs declared `persist: true` (Stage.kept)
    param_names: tuple[str, ...]  # the same for every instance (e.g. pretrain's `${item}` -> "item")
    wildcards: tuple[str, ...]
    instances: dict[tuple[str, ...], Stage]  # wildcard values -> the resolved stage

    @property
    def spec(self) -> StageSpec:
        """What the stage is (gpt1/pipeline/stage_table.py): its kind of work, its job option, its report category."""
        return STAGES[command_of(self.name)]

    def instance(self, values: dict) -> Stage:
        return self.instances[tuple(str(values[name]) for name in self.wildcards)]

    def log(self) -> str:
        """The log its command writes (gpt1/pipeline/stage_table.py's job_log), with the rule's wildcards in it: the
        stage's foreach/matrix axes are, in order, the options that name its job."""
        values = {option: f"{{{wildcard}}}" for option, wildcard in zip(self.spec.jobs, self.wildcards)}
        return str(job_log(command_of(self.name), values))

    def constraints(self) -> dict[str, str]:
        """Each wildcard matches only the values dvc.yaml resolves to, so no rule claims another's paths."""
        return {name: "|".join(sorted({re.escape(values[index]) for values in self.instances}, key=len,
                                      reverse=True))
                for index, name in enumerate(self.wildcards)}


def _placeholders(declared: dict, params: dict) -> tuple[tuple[str, ...], dict]:
    """The wildcards of a declared stage and a context that turns its references into `{wildcard}`."""
    if "foreach" in declared:
        return ("key",), {**params, "key": "{key}", "item": "{item}"}
    if "matrix" in declared:
        axes = tuple(declared["matrix"])
        return axes, {**params, "item": {axis: f"{{{axis}}}" for axis in axes}}
    return (), params


def templates(dvc_yaml: Path | str, params: dict) -> list[Template]:
    declared = yaml.safe_load(Path(dvc_yaml).read_text())["stages"]
    result = []
    for name, body in declared.items():
        wildcards, context = _placeholders(body, params)
        pattern = _stage(name, body.get("do", body), context)
        if "{item}" in " ".join((pattern.command, *pattern.outs)):
            raise UserError(f"dvc.yaml stage '{name}': ${{item}} of a foreach may only appear in params; use ${{key}}")
        command = pattern.command
        for wildcard in wildcards:
            command = command.replace(f"{{{wildcard}}}", f"{{wildcards.{wildcard}}}")
        instances = dict(_instances(name, body, params))
        param_names = tuple(re.sub(r"\W", "_", key.replace(".", "__")).strip("_") for key in pattern.params)
        result.append(Template(name, command, pattern.deps, pattern.outs, pattern.kept, param_names, wildcards,
                               instances))
    return result


def is_code_fingerprint(path: str) -> bool:
    """Whether a dependency is a stage's code fingerprint (every stage has one, from user_files)."""
    return Path(path).parent == CODE_FINGERPRINTS


def stage_edges(stages: list[Stage]) -> list[tuple[str, str]]:
    """(upstream, downstream) between declared stages (`finetune`, not `finetune@full`): downstream depends on a
    path upstream writes, inside it or around it; the code fingerprints, which every stage reads from user_files, are
    left out, so that the edges show how the data flows. In declaration order."""
    declared = list(dict.fromkeys(stage.declared for stage in stages))
    found = set()
    for downstream in stages:
        for dep in (dep for dep in downstream.deps if not is_code_fingerprint(dep)):
            for upstream in stages:
                if any(dep == out or out.startswith(dep.rstrip("/") + "/") or dep.startswith(out.rstrip("/") + "/")
                       for out in upstream.outs):
                    found.add((upstream.declared, downstream.declared))
    return sorted(found, key=lambda edge: (declared.index(edge[0]), declared.index(edge[1])))


def drawing(stages: list[Stage]) -> str:
    """The DAG as a Mermaid flowchart, each declared stage once with its number of jobs where it has several (the
    README's drawing is this, for the default; tests/test_dag.py keeps them equal)."""
    jobs = Counter(stage.declared for stage in stages)
    lines = ["flowchart LR"]
    lines += [f'  {name}["{name} ({count})"]' for name, count in jobs.items() if count > 1]
    lines += [f"  {upstream} --> {downstream}" for upstream, downstream in stage_edges(stages)]
    return "\n".join(lines) + "\n"


def _listed(paths: list[str]) -> str:
    """Paths as the stage table lists them, in code, a folder with its trailing slash. A file in the folder of the file
    before it is named from there (`results/scores.csv`, `scores_summary.csv`), so a row stays short; a folder is
    always named whole, never read as one inside another."""
    shown, folder = [], None
    for path in paths:
        if is_folder(path):
            shown.append(f"`{path}/`")
            folder = None
        elif folder and path.startswith(folder):
            shown.append(f"`{path.removeprefix(folder)}`")
        else:
            shown.append(f"`{path}`")
            folder = str(Path(path).parent) + "/"
    return ", ".join(shown) or "—"


def stage_table_markdown(templates: list[Template]) -> str:
    """docs/pipeline.md's table of stages: each declared stage once, with its number of jobs for the params given
    (and the wildcards that name them), its command, what it does (its help in gpt1/pipeline/stage_table.py) and the
    data/ and results/ paths it reads and writes (tests/test_dag.py keeps the page equal to this, for the default)."""
    lines = ["| stage | jobs | command | what it does | reads | writes |", "|---|---|---|---|---|---|"]
    for template in templates:
        jobs = f"{len(template.instances)} ({' × '.join(template.wildcards)})" if template.wildcards else "1"
        command = template.command.replace("{wildcards.", "{")
        reads = _listed([dep for dep in template.deps if dep.startswith(("data/", "results/"))])
        prints = [out for out in template.outs if is_code_fingerprint(out)]
        writes = _listed([out for out in template.outs if not is_code_fingerprint(out)]) + (
            f", `{CODE_FINGERPRINTS}/<stage>.txt`" if prints else "")
        help_text = template.spec.help.replace("|", "\\|").replace("*", "\\*")
        lines.append(f"| {template.name} | {jobs} | `{command}` | {help_text} | {reads} | {writes} |")
    return "\n".join(lines) + "\n"
