"""What is derived rather than kept by hand, so that it cannot drift: each dvc.yaml stage's code dependencies, from
its imports (gpt1/pipeline/code_deps.py), then the documentation drawn from dvc.yaml and the stage table for the
default params: the README's Mermaid drawing of the DAG (`dag.drawing`) and docs/pipeline.md's table of stages
(`dag.stage_table_markdown`). `python -m gpt1.pipeline.generated` rewrites all three in place; tests/test_dag.py fails
while any differs from what it would write.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from gpt1.files.atomic import write_text_if_changed
from gpt1.pipeline import code_deps, dag

REGENERATE = "python -m gpt1.pipeline.generated"
# Each generated part sits between two markers; the rest of the page is prose, written by hand and kept as it is.
DRAWING = ("```mermaid\n", "```")
STAGE_TABLE = ("<!-- generated from dvc.yaml and gpt1/pipeline/stage_table.py: edit those, then run "
               f"`{REGENERATE}` -->\n", "<!-- end of the generated table -->\n")


def generated(root: Path) -> dict[Path, tuple[tuple[str, str], str]]:
    """{page: (its markers, the text between them)}, for the project at `root` with its default params."""
    # params.yaml as it is, the default: no profile over it. Read here, not through gpt1.params: that package reaches
    # gpt1.data, whose text work runs through this one (gpt1/pipeline/parallel.py), and the imports would go round.
    dvc_yaml, params = root / "dvc.yaml", yaml.safe_load((root / "params.yaml").read_text(encoding="utf-8"))
    return {root / "README.md": (DRAWING, dag.drawing(dag.resolve(dvc_yaml, params))),
            root / "docs" / "pipeline.md": (STAGE_TABLE, dag.stage_table_markdown(dag.templates(dvc_yaml, params)))}


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
    dvc_yaml = root / "dvc.yaml"  # first: the drawing and the table are read from it
    write_text_if_changed(dvc_yaml, code_deps.rewrite(dvc_yaml.read_text(encoding="utf-8"), root))
    for page, (markers, part) in generated(root).items():
        before, _, after = split(page.read_text(encoding="utf-8"), markers)
        write_text_if_changed(page, before + part + after)


if __name__ == "__main__":
    main()
