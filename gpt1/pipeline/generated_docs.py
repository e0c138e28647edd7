"""The documentation generated from dvc.yaml and the stage table for the default params, so that it cannot drift from
them: the README's Mermaid drawing of the DAG (`dag.drawing`) and docs/pipeline.md's table of stages
(`dag.stage_table_markdown`). `python -m gpt1.pipeline.generated_docs` rewrites both in place; tests/test_dag.py fails
while either page differs from what it would write.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from gpt1.pipeline import dag

REGENERATE = "python -m gpt1.pipeline.generated_docs"
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
    for page, (markers, part) in generated(root).items():
        before, _, after = split(page.read_text(encoding="utf-8"), markers)
        page.write_text(before + part + after, encoding="utf-8")


if __name__ == "__main__":
    main()
