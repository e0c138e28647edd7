"""Both pipelines, resolved into the same plain shape, so a test can compare them stage by stage.

A stage becomes (command, dependencies, outputs, parameter values). DVC's view comes from its own
index (foreach/matrix expanded); Snakemake's from the jobs of its DAG for the default target, built
with forceall so every job appears whatever exists on disk.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import yaml


@dataclass(frozen=True)
class StageView:
    command: str
    deps: frozenset[str]
    outs: frozenset[str]
    params: frozenset[str]  # JSON of each parameter value the stage depends on


def _lookup(params: dict, dotted: str):
    value = params
    for part in dotted.split("."):
        value = value[part]
    return value


def _as_json(value) -> str:
    return json.dumps(value, sort_keys=True)


def dvc_stages(root: Path) -> dict[str, StageView]:
    """DVC's own resolution of root/dvc.yaml with root/params.yaml, keyed by stage address."""
    from dvc.repo import Repo

    params = yaml.safe_load((root / "params.yaml").read_text())
    views = {}
    with Repo(str(root)) as repo:
        for stage in repo.index.stages:
            deps, values = set(), set()
            for dep in stage.deps:
                keys = getattr(dep, "params", None)
                if keys is None:
                    deps.add(dep.def_path)
                else:
                    values.update(_as_json(_lookup(params, key)) for key in keys)
            views[stage.name] = StageView(
                command=stage.cmd, deps=frozenset(deps), outs=frozenset(o.def_path for o in stage.outs),
                params=frozenset(values),
            )
    return views


def snakemake_jobs(root: Path, targets: list[str] | None = None, configfiles: tuple[Path, ...] = ()
                   ) -> dict[str, StageView]:
    """Jobs Snakemake would run for `targets` (default: its default target), keyed by their command."""
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import ConfigSettings, DAGSettings, OutputSettings, Quietness, ResourceSettings

    views = {}
    with SnakemakeApi(OutputSettings(quiet={Quietness.ALL})) as api:
        workflow_api = api.workflow(resource_settings=ResourceSettings(cores=1),
                                    config_settings=ConfigSettings(configfiles=list(configfiles)),
                                    snakefile=root / "workflow" / "Snakefile", workdir=root)
        workflow_api.dag(dag_settings=DAGSettings(targets=set(targets or []), forceall=True))
        # The public API prints DAGs but does not return them; these two calls are what its
        # printdag() runs before printing.
        workflow = workflow_api._workflow
        workflow._prepare_dag(forceall=True, ignore_incomplete=True, lock_warn_only=True)
        workflow._build_dag()
        for job in workflow.dag.jobs:
            if job.shellcmd is None:  # target-only rules such as `all`
                continue
            view = StageView(
                command=job.shellcmd.strip(), deps=frozenset(map(str, job.input)),
                outs=frozenset(map(str, job.output)),
                params=frozenset(_as_json(value) for value in dict(job.params).values()),
            )
            views[view.command] = view
    return views
