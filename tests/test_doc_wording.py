"""The pages speak of the project alone: what it does, what was tried (on which commit or date) and what that gave.
A reader knows nothing of how the work on it was organised, so no page, history included, speaks of sessions,
issues, aims, windows of GPU time or calls to a machine."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

# Each pattern, with a word a page should use instead.
WORK_LOG = {
    r"\bsessions?\b": "a date or a commit",
    r"\bissues?\b": "what was asked of the code, or the upstream tracker's name (cpython#96062)",
    r"\baim(s|ed|ing)?\b": "a target, stated as a figure",
    r"\b(GPU|science|device|first|second|this|that|each|every|one|earlier|later|newest|last) windows?\b":
        "a run (of a tool, on a date)",
    r"\b(same|second|first|one|each|this|that) call\b": "the same run",
    r"\bthis round\b": "a date or a commit",
}


def work_log_words(text: str) -> list[tuple[int, str, str]]:
    """(line, the words, what to say instead) for each match of WORK_LOG in `text`."""
    found = []
    for pattern, instead in WORK_LOG.items():
        for match in re.finditer(pattern, text, flags=re.I):
            found.append((text.count("\n", 0, match.start()) + 1, match.group(0), instead))
    return sorted(found)


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_no_page_speaks_of_how_the_work_was_organised(page):
    found = work_log_words(page.read_text(encoding="utf-8"))
    assert not found, "\n".join(f"{page.relative_to(ROOT)}:{line}: {words!r}: say {instead}"
                                for line, words, instead in found)


def test_the_check_finds_the_words_and_leaves_the_trade_terms():
    text = ("Session 4 tried a rate.\nThe issue's aim, 65 %.\nThe science window and the same call.\n"
            "512-token windows of the corpus; spaCy is called once; the first calls to the model.\n")
    assert [(line, words) for line, words, _ in work_log_words(text)] == [
        (1, "Session"), (2, "aim"), (2, "issue"), (3, "same call"), (3, "science window")]
