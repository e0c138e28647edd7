"""dvc.yaml and workflow/Snakefile must declare the same pipeline: this test is how they stay in sync."""

from pathlib import Path

import pytest

from dag_views import dvc_stages, snakemake_jobs

ROOT = Path(__file__).resolve().parents[1]
MODULE_OF = {"tokenize": "encode", "layer-transfer": "finetune", "ablation": "analysis",
             "layer-figure": "analysis"}


@pytest.fixture(scope="module")
def both():
    return dvc_stages(ROOT), snakemake_jobs(ROOT)


def _collapse(inputs: frozenset[str], dvc_deps: frozenset[str]) -> frozenset[str]:
    """DVC depends on a folder where Snakemake lists the runs inside it (e.g. results/finetune)."""
    collapsed = set()
    for path in inputs:
        parents = [dep for dep in dvc_deps if path.startswith(dep + "/")]
        collapsed.add(parents[0] if parents else path)
    return frozenset(collapsed)


def test_same_commands(both):
    dvc, snakemake = both
    assert sorted(stage.command for stage in dvc.values()) == sorted(snakemake)


@pytest.mark.parametrize("field", ["outs", "params"])
def test_same_outputs_and_params(both, field):
    dvc, snakemake = both
    for name, stage in dvc.items():
        assert getattr(stage, field) == getattr(snakemake[stage.command], field), f"stage '{name}' differs in {field}"


def test_same_dependencies(both):
    dvc, snakemake = both
    for name, stage in dvc.items():
        assert _collapse(snakemake[stage.command].deps, stage.deps) == stage.deps, f"stage '{name}' differs in deps"


def test_folder_dependencies_cover_exactly_the_runs_inside(both):
    """Where DVC depends on a folder, Snakemake's inputs under it are exactly the outputs DVC puts there."""
    dvc, snakemake = both
    all_outs = {out for stage in dvc.values() for out in stage.outs}
    for name, stage in dvc.items():
        for dep in stage.deps:
            inside = {path for path in snakemake[stage.command].deps if path.startswith(dep + "/")}
            if inside:
                assert inside == {out for out in all_outs if out.startswith(dep + "/")}, (name, dep)


def test_stages_depend_on_the_code_they_run(both):
    dvc, _ = both
    for name, stage in dvc.items():
        verb = stage.command.split()[1]
        module = MODULE_OF.get(verb, verb)
        assert f"gpt1/{module}.py" in stage.deps, f"stage '{name}' does not list gpt1/{module}.py"


def test_default_target_builds_every_stage(both):
    """`rule all` must reach every stage; otherwise `snakemake --cores 8` silently skips some."""
    dvc, snakemake = both
    assert len(snakemake) == len(dvc)
