"""The package's shape: a library in subpackages that show the data's path, and one thin module per DAG
stage in gpt1/stages that no other module imports (so an edit to one stage never re-runs another)."""

import ast
from pathlib import Path

import pytest

from gpt1.pipeline.stage_table import STAGES, module_name

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "gpt1"
LIBRARY = ("data", "tokenizer", "model", "train", "eval")


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def imported(path: Path) -> set[str]:
    """Dotted gpt1 modules and packages that `path` imports (from ... import names included as candidates)."""
    return imported_from(ast.parse(path.read_text()))


def imported_from(tree: ast.AST) -> set[str]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "gpt1":
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("gpt1")}
    return found


def test_every_cli_stage_is_a_module_of_gpt1_stages_with_a_main():
    names = {path.stem for path in (PACKAGE / "stages").glob("*.py")} - {"__init__"}
    assert {module_name(command) for command in STAGES} == names
    for name in names:
        assert "\ndef main(args, params" in (PACKAGE / "stages" / f"{name}.py").read_text(), name


@pytest.mark.parametrize("path", sorted((PACKAGE / "stages").glob("*.py")), ids=lambda path: path.stem)
def test_a_stage_imports_no_other_stage(path):
    others = {f"gpt1.stages.{other.stem}" for other in (PACKAGE / "stages").glob("*.py")} - {f"gpt1.stages.{path.stem}"}
    assert not imported(path) & others


def test_the_library_imports_no_stage_and_no_cli():
    for path in modules():
        if path.parent.name in LIBRARY:
            bad = {name for name in imported(path) if name.startswith(("gpt1.stages", "gpt1.cli"))}
            assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


def test_package_inits_hold_only_a_docstring():
    """Stages list the modules they import as DVC dependencies, not the __init__ files on the way; so these
    must never hold code."""
    for package in ("stages", *LIBRARY):
        tree = ast.parse((PACKAGE / package / "__init__.py").read_text())
        assert len(tree.body) == 1 and isinstance(tree.body[0], ast.Expr), package


def _runtime_imports(path: Path) -> set[str]:
    """Like `imported`, without the imports under `if TYPE_CHECKING:` (annotations only, never executed)."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            node.body = []
    return imported_from(tree)


def test_no_two_parts_of_the_package_import_each_other_even_inside_functions():
    """A circle of imports works only while function-level imports hide it (gpt1.params.schema and gpt1.data used to
    import each other, and gpt1.params.schema reached gpt1.train through params_checks): between the subpackages and
    the top-level modules, every import counted, the graph has no cycle."""
    from graphlib import CycleError, TopologicalSorter

    def part(path: Path) -> str:  # gpt1.data, gpt1.train, ... or a top-level module such as gpt1.params.schema
        return ".".join(path.relative_to(ROOT).with_suffix("").parts[:2]).removesuffix(".__init__")

    graph: dict[str, set[str]] = {}
    for path in modules():
        reached = {part(ROOT / (module.replace(".", "/") + ".py")) for module in _runtime_imports(path)
                   if (ROOT / (module.replace(".", "/") + ".py")).is_file()}
        graph.setdefault(part(path), set()).update(reached - {part(path)})
    try:
        tuple(TopologicalSorter(graph).static_order())
    except CycleError as error:
        pytest.fail(f"parts of gpt1 that import each other: {' -> '.join(error.args[1])}")


def test_kept_checkpoints_are_the_step_files_by_update(tmp_path):
    """Pretraining publishes, fine-tuning and the zero-shot analysis find checkpoints by this one reading."""
    from gpt1 import layout

    for name in (layout.checkpoint_file(3), layout.checkpoint_file(120), "step_.safetensors", "step_x.safetensors",
                 "step_7.safetensors.tmp", layout.MODEL_FILE):
        (tmp_path / name).write_bytes(b"")
    assert layout.kept_checkpoints(tmp_path) == {3: tmp_path / "step_3.safetensors",
                                                 120: tmp_path / "step_120.safetensors"}
    assert layout.pretraining_checkpoint("lstm", 3, tmp_path).parent == layout.pretraining_checkpoints("lstm", tmp_path)


def test_nothing_points_outside_the_project():
    """A user's clone has only the project: no README, doc, code or workflow file may send them to ../shared."""
    texts = [ROOT / "README.md", *ROOT.glob("docs/**/*.md"), *PACKAGE.rglob("*.py"), *ROOT.glob("workflow/**/*"),
             *ROOT.glob("profiles/*.yaml"), ROOT / "params.yaml", ROOT / "dvc.yaml", ROOT / "Makefile"]
    pointing = [str(path.relative_to(ROOT)) for path in texts if path.is_file() and "../shared" in path.read_text()]
    assert not pointing, f"these refer to ../shared, which a clone does not have: {pointing}"


def test_the_pipeline_writes_in_data_only_inside_its_own_folders():
    """Every output dvc.yaml declares under data/ lies in one of layout.DATA_FOLDERS, the folders `make clean`
    removes."""
    import yaml

    from gpt1.layout import DATA_FOLDERS

    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    outs = [next(iter(out)) if isinstance(out, dict) else out for stage in stages.values()
            for field in ("outs", "metrics", "plots") for out in stage.get(field, [])]
    in_data = [out for out in outs if out.startswith("data/")]
    assert in_data and all(any(out == folder or out.startswith(folder + "/") for folder in DATA_FOLDERS)
                           for out in in_data), in_data


def test_make_clean_removes_what_the_pipeline_wrote_and_never_a_users_file(tmp_path):
    import shutil
    import subprocess

    from gpt1.layout import DATA_FOLDERS

    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    for folder in (*DATA_FOLDERS, "logs", "dvclive", ".snakemake"):
        (tmp_path / folder / "sub").mkdir(parents=True)
        (tmp_path / folder / "sub" / "written.json").write_text("{}")
    users = [tmp_path / "data/own/my_task.tsv", tmp_path / "data/notes.txt", tmp_path / "results/ablation.md"]
    for path in users:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("text\tlabel\nmine\tyes\n")
    subprocess.run(["make", "--no-print-directory", "clean"], cwd=tmp_path, check=True, capture_output=True)
    assert [path.read_text() for path in users] == ["text\tlabel\nmine\tyes\n"] * 3
    left = sorted(str(path.relative_to(tmp_path)) for path in tmp_path.rglob("*") if path.is_file())
    assert left == ["Makefile", "data/notes.txt", "data/own/my_task.tsv", "results/ablation.md"]

    for path in users[:2]:  # with nothing of the user's left in it, data/ itself goes too
        path.unlink()
    (tmp_path / "data/own").rmdir()
    (tmp_path / "data/raw").mkdir()
    subprocess.run(["make", "--no-print-directory", "clean"], cwd=tmp_path, check=True, capture_output=True)
    assert not (tmp_path / "data").exists()
