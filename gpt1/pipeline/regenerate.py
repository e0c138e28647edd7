"""What is derived rather than kept by hand, so that it cannot drift: dvc.yaml, from the rows of
gpt1/pipeline/stage_table.py and the settings' roles (gpt1/params/roles.py; gpt1/pipeline/dvc_yaml.py); each stage's
code fingerprint, from the modules its imports reach (gpt1/pipeline/code_fingerprint.py); then the documentation
drawn from dvc.yaml and the stage table for the default params: the README's Mermaid drawing of the DAG
(`dag.drawing`) and docs/pipeline.md's table of stages (`dag.stage_table_markdown`).
`python -m gpt1.pipeline.regenerate` rewrites them in place; tests/test_dag.py fails while any differs from what it
would write.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import yaml

from gpt1.files.atomic import write_text_if_changed
from gpt1.params.files import compose_raw
from gpt1.params.schema import parse_params
from gpt1.pipeline import code_fingerprint, dag, dvc_yaml

REGENERATE = "python -m gpt1.pipeline.regenerate"
DVC_YAML_HEADER = (
    "# Generated from gpt1/pipeline/stage_table.py, a row per stage, each depending on the fingerprint of the code it\n"
    "# runs (code_fingerprints/, gpt1/pipeline/code_fingerprint.py) and with the settings whose role names it as params\n"
    f"# (the schema's): edit the rows or the roles, then run `{REGENERATE}`.\n"
    "# DVC runs it as it is; workflow/Snakefile builds one Snakemake rule per stage from it (gpt1/pipeline/dag.py\n"
    "# resolves foreach/matrix and ${...} as DVC does; tests/test_dag.py checks both).\n")
# Each generated part of a page sits between two markers; the rest of the page is prose, written by hand and kept.
DRAWING = ("```mermaid\n", "```")
STAGE_TABLE = (f"<!-- generated from gpt1/pipeline/stage_table.py: edit it, then run `{REGENERATE}` -->\n",
               "<!-- end of the generated table -->\n")


# dvc.yaml's first line: the sha256 of the rest, so that a hand edit shows and the generator never writes over it.
DIGEST = "# sha256 of the rest of this file, as written: "


def dvc_yaml_text() -> str:
    """dvc.yaml as the rows give it."""
    body = DVC_YAML_HEADER + dvc_yaml.text()
    return f"{DIGEST}{hashlib.sha256(body.encode()).hexdigest()}\n{body}"


def edited_by_hand(text: str) -> bool:
    """Whether dvc.yaml's `text` is other than what the generator wrote (its recorded digest does not match)."""
    first, _, body = text.partition("\n")
    return first != f"{DIGEST}{hashlib.sha256(body.encode()).hexdigest()}"


def write_dvc_yaml(root: Path) -> None:
    """dvc.yaml from the rows; a file edited by hand is written over only where the edit changes none of its stages
    (comments, layout), and otherwise stops with what to do, the file as it was."""
    path, text = root / "dvc.yaml", dvc_yaml_text()
    if path.is_file():
        before = path.read_text(encoding="utf-8")
        if before != text and edited_by_hand(before) and yaml.safe_load(before) != yaml.safe_load(text):
            raise SystemExit(f"{path} was edited by hand since `{REGENERATE}` wrote it, and writing it again would "
                             "lose that edit: make it in gpt1/pipeline/stage_table.py's rows (or remove dvc.yaml to "
                             "write it from the rows alone), then run the command again")
    write_text_if_changed(path, text)


def generated(root: Path) -> dict[Path, tuple[tuple[str, str], str]]:
    """{page: (its markers, the text between them)}, for the project at `root` with its default params."""
    # params.yaml as it is, the default: no profile over it. Validated, then resolved as DVC resolves it, from the
    # values as written (as workflow/Snakefile does).
    params, source = compose_raw(root / "params.yaml", ())
    parse_params(params, source)
    path = root / "dvc.yaml"
    return {root / "README.md": (DRAWING, dag.drawing(dag.resolve(path, params))),
            root / "docs" / "pipeline.md": (STAGE_TABLE, dag.stage_table_markdown(dag.templates(path, params)))}


def split(text: str, markers: tuple[str, str]) -> tuple[str, str, str]:
    """(what precedes the generated part, the part, what follows it): the part runs from the first begin marker to the
    end marker after it."""
    begin, end = markers
    before, found, rest = text.partition(begin)
    part, closed, after = rest.partition(end)
    if not found or not closed:
        raise ValueError(f"the page has no part between {begin.strip()!r} and {end.strip()!r}")
    return before + begin, part, end + after


def main(root: Path = Path(".")) -> None:
    write_dvc_yaml(root)  # first: the drawing and the table are read from it
    code_fingerprint.refresh(root, root)
    for page, (markers, part) in generated(root).items():
        before, _, after = split(page.read_text(encoding="utf-8"), markers)
        write_text_if_changed(page, before + part + after)


if __name__ == "__main__":
    main()
