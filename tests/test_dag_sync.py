"""dvc.yaml and workflow/Snakefile must declare the same pipeline: this test is how they stay in sync."""

from pathlib import Path

import pytest

from dag_views import dvc_stages, snakemake_jobs

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def both():
    return dvc_stages(ROOT), snakemake_jobs(ROOT)


def test_same_commands(both):
    dvc, snakemake = both
    assert sorted(stage.command for stage in dvc.values()) == sorted(snakemake)


@pytest.mark.parametrize("field", ["deps", "outs", "params"])
def test_same_dependencies_outputs_and_params(both, field):
    dvc, snakemake = both
    for name, stage in dvc.items():
        job = snakemake[stage.command]
        assert getattr(stage, field) == getattr(job, field), f"stage '{name}' differs in {field}"


def test_stages_depend_on_the_code_they_run(both):
    dvc, _ = both
    for name, stage in dvc.items():
        module = stage.command.split()[1].replace("tokenize", "encode")
        assert f"gpt1/{module}.py" in stage.deps, f"stage '{name}' does not list gpt1/{module}.py"


def test_default_target_builds_every_output(both):
    """`rule all` must reach every stage; otherwise `snakemake --cores 8` silently skips some."""
    dvc, snakemake = both
    assert len(snakemake) == len(dvc)
