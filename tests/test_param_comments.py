"""The comments of params.yaml and the profiles point to places that exist: every file of the project they name, and
every section they quote by its title ("docs/data.md, "Your own data"" must be a heading of docs/data.md)."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FILES = [ROOT / "params.yaml", *sorted((ROOT / "profiles").glob("*.yaml"))]
PATH = re.compile(r"(?<![\w/.-])((?:gpt1|docs|tools|tests|workflow|profiles)/[\w./-]*\w)")
SECTION = re.compile(r"((?:docs/)?[\w/-]+\.md), \"([^\"]+)\"")


def comments(path: Path) -> str:
    return "\n".join(line.split("#", 1)[1] for line in path.read_text(encoding="utf-8").splitlines() if "#" in line)


@pytest.mark.parametrize("path", FILES, ids=lambda path: path.name)
def test_every_file_a_comment_names_exists(path):
    named = set(PATH.findall(comments(path)))
    missing = sorted(name for name in named if not (ROOT / name.rstrip(".")).exists())
    assert missing == []


@pytest.mark.parametrize("path", FILES, ids=lambda path: path.name)
def test_every_section_a_comment_quotes_is_a_heading_of_its_page(path):
    for page, title in SECTION.findall(comments(path)):
        headings = re.findall(r"^#+ (.+)$", (ROOT / page).read_text(encoding="utf-8"), re.M)
        assert title in headings, f"{path.name}: {page} has no section {title!r}"


def test_the_check_finds_a_moved_file_and_a_renamed_section(tmp_path):
    assert PATH.findall("corpus parts (gpt1/registry.py lists them)") == ["gpt1/registry.py"]
    assert not (ROOT / "gpt1/registry.py").exists()
    assert SECTION.findall('set paths (docs/data.md, "Data: the paper profile")') == [
        ("docs/data.md", "Data: the paper profile")]
