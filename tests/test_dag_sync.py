"""dvc.yaml and workflow/Snakefile must declare the same pipeline: this test is how they stay in sync."""

import ast
from pathlib import Path

import pytest

from dag_views import dvc_stages, snakemake_jobs

ROOT = Path(__file__).resolve().parents[1]
MODULE_OF = {"tokenize": "encode", "layer-transfer": "finetune", "ablation": "analysis",
             "layer-figure": "analysis"}
# Modules whose edits cannot change a stage's outputs, so stages do not list them and the import walk stops
# at them: exception types, write-then-rename, and the params.yaml schema (a stage lists the params it reads
# under `params:`, and params.yaml sets every key; config.py would otherwise drag in every data loader
# through the task registry it validates names against).
NEUTRAL = {"errors", "atomic", "config"}


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


def gpt1_imports(module: str) -> set[str]:
    """The gpt1 modules that gpt1/<module>.py imports, at the top or inside functions."""
    found = set()
    for node in ast.walk(ast.parse((ROOT / "gpt1" / f"{module}.py").read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == "gpt1":
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("gpt1."):
            found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found |= {alias.name.split(".")[1] for alias in node.names if alias.name.startswith("gpt1.")}
    return found


def imported_closure(module: str) -> set[str]:
    """`module` and every gpt1 module it reaches through imports, not walking through NEUTRAL ones."""
    seen, todo = set(), [module]
    while todo:
        current = todo.pop()
        if current not in seen:
            seen.add(current)
            if current not in NEUTRAL:
                todo.extend(gpt1_imports(current))
    return seen


def test_stages_depend_on_exactly_the_code_they_import(both):
    """Editing a module that a stage runs must re-run the stage, and only those modules are listed."""
    dvc, _ = both
    for name, stage in dvc.items():
        verb = stage.command.split()[1]
        expected = {f"gpt1/{module}.py" for module in imported_closure(MODULE_OF.get(verb, verb)) - NEUTRAL}
        declared = {dep for dep in stage.deps if dep.startswith("gpt1/")}
        assert declared == expected, (f"stage '{name}': missing {sorted(expected - declared)}, "
                                      f"not imported {sorted(declared - expected)}")


def test_the_import_walk_sees_late_imports_and_the_neutral_modules_exist():
    assert "registry" in gpt1_imports("download")  # imported inside a function
    assert {"bpe", "text"} <= imported_closure("finetune")  # through gpt1.transforms
    assert all((ROOT / "gpt1" / f"{module}.py").is_file() for module in NEUTRAL)


def test_default_target_builds_every_stage(both):
    """`rule all` must reach every stage; otherwise `snakemake --cores 8` silently skips some."""
    dvc, snakemake = both
    assert len(snakemake) == len(dvc)
