"""Each stage's code dependencies in dvc.yaml, derived from its imports rather than typed: `code_of` walks a stage
module's gpt1 imports (at the top or inside functions) to their closure, and `rewrite` puts that list in place of
the `gpt1/` lines of every stage's `deps:`, leaving the rest of dvc.yaml (data dependencies, comments) as it is.

Written into dvc.yaml, not kept in a separate fingerprint per stage, so that DVC itself hashes every module a stage
runs: `dvc status` names the stages a code edit re-runs before anything runs. `python -m gpt1.pipeline.generated`
writes them; tests/test_dag.py fails while dvc.yaml differs from what it would write.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path
from typing import Callable

PACKAGE = "gpt1"
# Modules whose edits cannot change a stage's outputs, so stages do not list them and the walk stops at them:
# exception types, write-then-rename, and the params.yaml schema (a stage lists the params it reads under
# `params:`, and params.yaml sets every key; the schema would otherwise drag in every data loader through the task
# registry it validates names against). Package __init__ files hold only a docstring (tests/test_layout.py), so
# they are not listed either.
NEUTRAL = frozenset({"errors", "files.atomic", "params.schema"})


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


_STAGE = re.compile(r"^  (\w+):\s*(#.*)?$")  # a stage's name, one level below `stages:`
_ITEM = re.compile(r"^(\s*)- (\S+)")


def rewrite(text: str, root: Path) -> str:
    """dvc.yaml's text with each stage's `gpt1/` dependencies replaced by `code_of` the stage, after its other
    dependencies; a stage without `deps:` gains one after its `cmd:`."""
    lines, out, stage, index = text.splitlines(keepends=True), [], None, 0
    in_stages = False
    imports = cache(lambda module: imports_of(root, module))  # each module parsed once for every stage
    while index < len(lines):
        line = lines[index]
        if not line.startswith((" ", "\n", "#")):
            in_stages = line.startswith("stages:")
        elif in_stages and (match := _STAGE.match(line)):
            stage = match.group(1)
        stripped = line.strip()
        if in_stages and stage and stripped == "deps:":
            out.append(line)
            index += 1
            indent = _item_indent(lines[index:], _indent(line))
            while index < len(lines) and _in_list(lines[index], indent):
                item = _ITEM.match(lines[index])
                if not (item and item.group(2).startswith(f"{PACKAGE}/")):
                    out.append(lines[index])  # a data dependency, or a comment among them
                index += 1
            out.extend(f"{indent}- {path}\n" for path in code_of(root, stage, imports))
            stage = None  # one list per stage
            continue
        out.append(line)
        if in_stages and stage and stripped.startswith("cmd:") and not _has_deps(lines, index):
            indent = _indent(line)
            out.append(f"{indent}deps:\n")
            out.extend(f"{indent}  - {path}\n" for path in code_of(root, stage, imports))
            stage = None
        index += 1
    return "".join(out)


def _indent(line: str) -> str:
    return line[:len(line) - len(line.lstrip())]


def _item_indent(following: list[str], key_indent: str) -> str:
    """The indentation of a list's items: that of its first item (YAML allows the key's own or deeper), or two
    spaces below the key where the list is empty."""
    for line in following:
        if item := _ITEM.match(line):
            return item.group(1)
        if line.strip() and not line.lstrip().startswith("#"):
            break
    return key_indent + "  "


def _in_list(line: str, indent: str) -> bool:
    """Whether `line` belongs to a list whose items sit at `indent`: one of its items, or a comment among them."""
    item = _ITEM.match(line)
    return bool(item and item.group(1) == indent) or (line.startswith(indent) and line.lstrip().startswith("#"))


def _has_deps(lines: list[str], cmd_index: int) -> bool:
    """Whether the stage whose `cmd:` is at `cmd_index` has a `deps:` key (at the cmd's indentation)."""
    indent = len(_indent(lines[cmd_index]))
    for line in lines[cmd_index + 1:]:
        if line.strip() and not line.lstrip().startswith("#"):
            depth = len(_indent(line))
            if depth < indent:
                return False
            if depth == indent and line.strip() == "deps:":
                return True
    return False
