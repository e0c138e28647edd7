"""Each stage's code as DVC and Snakemake see it: one small tracked file per stage (code_fingerprints/<stage>.txt),
listing every gpt1 module the stage runs (its import closure, gpt1/pipeline/code_deps.py) with the digest of that
module's parsed code. A stage depends on its file, not on the modules' bytes, so a comment, a docstring or a change
of layout re-runs nothing, while an edit of code that runs changes the digest and re-runs exactly the stages whose
closure holds the module.

The digest is of the module's syntax tree, written out field by field without line numbers, with each module's,
class's and function's docstring left out, and with the fields that are empty or unset left out too (so that a
Python release adding an empty field to a node leaves every digest as it was). Its one limit: code that reads a
docstring at run time (a CLI's help text drawn from `__doc__`) changes what it prints without changing a digest;
no stage writes such text into an output.

The files are refreshed, each written only when its text changes, by the `user-files` stage (which DVC runs first on
every `dvc repro`), by workflow/Snakefile before it builds its rules, and by `python -m gpt1.pipeline.regenerate`;
tests/test_dag.py fails while a committed file is stale.
"""

from __future__ import annotations

import ast
import hashlib
import json
from functools import cache
from pathlib import Path
from typing import Callable, Iterable

from gpt1 import layout
from gpt1.files.atomic import write_text_if_changed
from gpt1.pipeline import code_deps

STAGES_PACKAGE = Path(code_deps.PACKAGE) / "stages"
# Where the gpt1 package that runs is read from (a checkout, or a copy on PYTHONPATH): the fingerprints are of the
# code that runs, written into the project the pipeline runs in.
SOURCE = Path(__file__).resolve().parents[2]
HEADER = ("# The gpt1 modules this stage runs, each with the sha256 of its parsed code (comments, docstrings and layout\n"
          "# left out): gpt1/pipeline/code_fingerprint.py. Rewritten by `dvc repro user_files`; commit it with the code.\n")
_DOCUMENTED = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def _is_docstring(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant) \
        and isinstance(statement.value.value, str)


def _plain(node) -> object:
    """A syntax tree as plain JSON values: each node its type and its non-empty fields, docstrings left out."""
    if isinstance(node, ast.AST):
        fields = {}
        for name, value in ast.iter_fields(node):
            if name == "body" and isinstance(node, _DOCUMENTED) and value and _is_docstring(value[0]):
                value = value[1:]
            if value == [] or value is None and not (isinstance(node, ast.Constant) and name == "value"):
                continue
            fields[name] = _plain(value)
        return [type(node).__name__, fields]
    if isinstance(node, list):
        return [_plain(item) for item in node]
    return repr(node)  # a constant: its type shows (1, 1.0, True, '1' and b'1' differ)


def code_digest(source: str) -> str:
    """The sha256 of a module's code as it runs: the same for sources that differ only in comments, docstrings or
    layout."""
    tree = json.dumps(_plain(ast.parse(source)), separators=(",", ":"))
    return hashlib.sha256(tree.encode()).hexdigest()


def stages(root: Path) -> list[str]:
    """The stages whose code is fingerprinted: every module of gpt1/stages (a stage's name is its module's), but
    user_files, which DVC runs every time."""
    return sorted(path.stem for path in (Path(root) / STAGES_PACKAGE).glob("*.py")
                  if path.stem not in {"__init__", "user_files"})


def fingerprint_text(root: Path, stage: str, imports: Callable[[str], set[str]] | None = None,
                     digest: Callable[[str], str] | None = None) -> str:
    """The text of stage `stage`'s fingerprint file: a line per module it runs, `<sha256>  <path>`."""
    digest = digest or (lambda path: code_digest((Path(root) / path).read_text(encoding="utf-8")))
    return HEADER + "".join(f"{digest(path)}  {path}\n" for path in code_deps.code_of(root, stage, imports))


def texts(root: Path, names: Iterable[str] | None = None) -> dict[str, str]:
    """{stage: its fingerprint file's text}, each module parsed once however many stages run it."""
    root = Path(root)
    imports = cache(lambda module: code_deps.imports_of(root, module))
    digest = cache(lambda path: code_digest((Path(root) / path).read_text(encoding="utf-8")))
    return {stage: fingerprint_text(root, stage, imports, digest) for stage in (names or stages(root))}


def stages_digest(names: Iterable[str], root: Path = SOURCE) -> str:
    """One sha256 of the code of stages `names` together (a fine-tuning seed's saved state holds it)."""
    return hashlib.sha256("".join(texts(root, sorted(names)).values()).encode()).hexdigest()


def stale(root: Path, source: Path = SOURCE) -> list[str]:
    """The stages whose fingerprint file under project `root` is missing or differs from their code now (the package
    under `source`)."""
    return [stage for stage, text in texts(source).items()
            if not (path := Path(root) / layout.code_fingerprint(stage)).is_file()
            or path.read_text(encoding="utf-8") != text]


def refresh(root: Path, source: Path = SOURCE) -> list[str]:
    """Write each stage's fingerprint file under project `root` where its text changed (the package under
    `source`); returns those stages."""
    return [stage for stage, text in texts(source).items()
            if write_text_if_changed(Path(root) / layout.code_fingerprint(stage), text)]
