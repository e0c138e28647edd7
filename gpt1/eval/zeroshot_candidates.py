"""The zero-shot heuristics' candidate sets as token ids, and their file: the `encode-zeroshot` stage builds them
with the BPE (gpt1/eval/zeroshot_tasks.py) and writes them once; the `zeroshot` stage reads them, so scoring the
checkpoints needs neither the BPE nor spaCy (a GPU machine's bundle carries this file instead)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

from gpt1.files.atomic import atomic_write_text

FORMAT = 1


@dataclass(frozen=True)
class Candidate:
    """Token ids: `continuation` is scored given `context` (which itself is never scored)."""

    context: tuple[int, ...]
    continuation: tuple[int, ...]


@dataclass(frozen=True)
class ZeroShotTask:
    name: str
    stands_for: str
    chance: float
    average: bool  # score = mean token log-prob of the continuation (True) or its sum (False)
    candidates: tuple[tuple[Candidate, ...], ...]  # per example, its candidates
    labels: tuple[int, ...]  # per example, the index of the right candidate (thresholded: 1 = acceptable)
    # Per candidate index, a context-free version whose score is subtracted from every example's (PMI).
    unconditional: tuple[Candidate, ...] = ()
    # Thresholded (one candidate per example): the share of examples to call acceptable, highest scores first.
    accept_share: float | None = None


def write_tasks(path: Path, tasks: Sequence[ZeroShotTask]) -> None:
    record = {"format": FORMAT, "tasks": [asdict(task) for task in tasks]}
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(record, separators=(",", ":")) + "\n")


def _candidate(entry: dict) -> Candidate:
    return Candidate(tuple(entry["context"]), tuple(entry["continuation"]))


def read_tasks(path: Path) -> list[ZeroShotTask]:
    """The tasks as `write_tasks` wrote them."""
    record = json.loads(path.read_text(encoding="utf-8"))
    if record.get("format") != FORMAT:
        raise ValueError(f"{path}: zero-shot candidates in format {record.get('format')}, expected {FORMAT}; "
                         "run `gpt1 encode-zeroshot` again")
    return [ZeroShotTask(
        entry["name"], entry["stands_for"], entry["chance"], entry["average"],
        tuple(tuple(_candidate(candidate) for candidate in example) for example in entry["candidates"]),
        tuple(entry["labels"]), tuple(_candidate(candidate) for candidate in entry["unconditional"]),
        entry["accept_share"]) for entry in record["tasks"]]
