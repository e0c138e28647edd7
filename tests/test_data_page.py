"""docs/data.md's counts of the default's data are those the main job wrote, as docs/measurements/default-data.json
(tools/record_default_data.py) holds them: each corpus part's documents and train text, each task's split sizes,
the Rotten Tomatoes snippets dropped for a rating of 0 and the corpus's train text in all."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "data.md"
RECORD = ROOT / "docs" / "measurements" / "default-data.json"


def number(text: str) -> int:
    return int(text.replace(",", ""))


def table_rows(text: str) -> dict[str, list[str]]:
    """Each table row whose first cell is a code span: its name → its cells."""
    rows = {}
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("| `") and len(cells) > 1:
            rows[cells[0].strip("`")] = cells
    return rows


def page_counts(text: str) -> dict:
    rows = table_rows(text)
    corpus = {name: {"documents": number(cells[2]), "train_mb": float(cells[3])}
              for name, cells in rows.items() if len(cells) == 4 and cells[2][:1].isdigit()}
    tasks = {name: dict(zip(("train", "dev", "test"), map(number, cells[4].split(" / "))))
             for name, cells in rows.items() if len(cells) == 5 and " / " in cells[4]}
    dropped = re.search(r"the ([\d,]+) rated 0 dropped", text)
    total = re.search(r"In all \(\[counts\]\(measurements/default-data\.json\)\): ([\d.]+) × 10⁶ bytes of train",
                      text)
    return {"corpus": corpus, "tasks": tasks, "dropped": dropped and number(dropped.group(1)),
            "total_mb": total and float(total.group(1))}


def test_the_data_page_cites_the_record_and_each_count_is_the_main_jobs():
    text = PAGE.read_text(encoding="utf-8")
    assert "(measurements/default-data.json)" in text
    record = json.loads(RECORD.read_text())
    shown = page_counts(text)
    assert set(shown["corpus"]) == set(record["corpus"]) - {"total"}
    for part, counts in shown["corpus"].items():
        held = record["corpus"][part]
        assert counts == {"documents": held["documents"], "train_mb": round(held["train_bytes"] / 1e6, 2)}, part
    assert shown["tasks"] == record["tasks"]
    assert shown["dropped"] == record["rt_polarity_zero_rated"]
    assert shown["total_mb"] == round(record["corpus"]["total"]["train_bytes"] / 1e6, 1)


def test_a_count_that_drifts_from_the_record_is_caught():
    text = PAGE.read_text(encoding="utf-8")
    drifted = text.replace("| 2,225 |", "| 2,226 |").replace("8,454 / 1,057 / 1,057", "8,455 / 1,057 / 1,057")
    shown, honest = page_counts(drifted), page_counts(text)
    assert shown["corpus"]["bbc_news"]["documents"] == honest["corpus"]["bbc_news"]["documents"] + 1
    assert shown["tasks"]["rt_polarity"]["train"] == honest["tasks"]["rt_polarity"]["train"] + 1
