"""Each stage's code dependencies in dvc.yaml, derived from its imports rather than typed: `code_of` walks a stage
module's gpt1 imports (at the top or inside functions) to their closure; gpt1/pipeline/dvc_yaml.py lists them after
the stage's data dependencies.

Written into dvc.yaml, not kept in a separate fingerprint per stage, so that DVC itself hashes every module a stage
runs: `dvc status` names the stages a code edit re-runs before anything runs. `python -m gpt1.pipeline.regenerate`
writes them; tests/test_dag.py fails while dvc.yaml differs from what it would write.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Callable

PACKAGE = "gpt1"
# Modules whose edits cannot change a stage's outputs, so stages do not list them and the walk stops at them:
# exception types, write-then-rename, and the params.yaml schema with the roles its settings declare (a stage lists
# the params it reads under `params:`, and params.yaml sets every key; the schema would otherwise drag in every data
# loader through the task registry it validates names against). Package __init__ files hold only a docstring
# (tests/test_layout.py), so they are not listed either.
NEUTRAL = frozenset({"errors", "files.atomic", "params.schema", "params.roles"})


def source_of(root: Path, module: str) -> Path:
    """gpt1/<module as a path>.py for a dotted module below gpt1 (e.g. "train.finetune")."""
    return root / PACKAGE / (module.replace(".", "/") + ".py")


def imports_of(root: Path, module: str) -> set[str]:
    """The gpt1 modules (dotted, below gpt1) that `module` imports, at the top or inside functions."""
    found = set()
    for node in ast.walk(ast.parse(source_of(root, module).read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == PACKAGE:
            package = node.module.partition(".")[2]
            if package and source_of(root, package).is_file():  # from gpt1.data.records import TaskSpec
                found.add(package)
            else:  # from gpt1.data import records, registry
                found |= {name for alias in node.names
                          if source_of(root, name := f"{package}.{alias.name}".strip(".")).is_file()}
        elif isinstance(node, ast.Import):
            found |= {alias.name.partition(".")[2] for alias in node.names if alias.name.startswith(PACKAGE + ".")}
    return found


def closure(root: Path, module: str, imports: Callable[[str], set[str]] | None = None) -> set[str]:
    """`module` and every gpt1 module it reaches through imports, not walking through the NEUTRAL ones. `imports`:
    a module's imports (default: `imports_of`, parsing its file), so that a caller walking many stages parses each
    module once."""
    imports = imports or (lambda name: imports_of(root, name))
    seen, todo = set(), [module]
    while todo:
        current = todo.pop()
        if current not in seen:
            seen.add(current)
            if current not in NEUTRAL:
                todo.extend(imports(current))
    return seen


def code_of(root: Path, stage: str, imports: Callable[[str], set[str]] | None = None) -> list[str]:
    """The files dvc.yaml's stage `stage` (its module's name in gpt1/stages) depends on: its own module first, then
    the rest of its closure in path order."""
    own = f"stages.{stage}"
    rest = sorted(str(source_of(Path(), module)) for module in closure(root, own, imports) - NEUTRAL - {own})
    return [str(source_of(Path(), own)), *rest]
