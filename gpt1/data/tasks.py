"""Task definitions and their fixed, seeded train/dev/test splits.

A task definition says which sources it reads and how to turn their raw files into labelled examples
(`load`). Upstream splits are kept where they carry labels; a missing labelled test split is replaced
by the upstream dev split, and a missing dev split is carved from train with the project's seed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from gpt1.errors import UserError
from gpt1.data.records import SPLITS, Example, TaskSpec, texts_of

Loader = Callable[[Path], dict[str, list[Example]]]


@dataclass(frozen=True)
class TaskSize:
    """How big a registered task is before anything is downloaded, for `gpt1 plan` (gpt1/commands/plan_tasks.py)."""

    train_rows: int  # rows of the upstream training file as the task's loader returns them
    carved: tuple[str, ...]  # the splits make_splits carves from them (those the loader does not return)
    # Assumed mean BPE tokens of each text of an example, in texts_of order (context first, then each candidate),
    # before truncation: the published mean word counts where known, else rough typical sentence lengths, at about
    # 1.3 tokens a word.
    mean_text_tokens: tuple[int, ...]


@dataclass(frozen=True)
class TaskDefinition:
    spec: TaskSpec
    sources: tuple[str, ...]  # names of the sources (catalogue entries) whose files `load` reads
    load: Loader  # data/raw -> labelled splits found upstream ("train" required; "dev", "test" optional)
    # Shares of train to carve for a missing dev/test split instead of data.task_*_fraction, so that a
    # small task still gets a test set large enough for a useful interval (about ±3 points at 1,000 rows).
    carved_fractions: dict[str, float] | None = None
    # Which of the paper's zero-shot heuristics reads this task (gpt1/eval/zeroshot_tasks.py): "sentiment" (SST-2's
    # " very" + label word), "acceptability" (CoLA's thresholded average log-probability), "choice" (RACE's
    # and Story Cloze's most probable answer), or None.
    zero_shot: str | None = None
    # Remove exact duplicate examples before splits are carved (a user's own file: nobody curated it); the
    # registered tasks keep their sources' rows as published.
    deduplicate: bool = False
    size: TaskSize | None = None  # None: known only once prepared (a user's task, or one scored with another's model)


def drop_duplicates(found: dict[str, list[Example]]) -> tuple[dict[str, list[Example]], int]:
    """Each distinct example (the same texts, whatever its label) once: a test row before a dev row before a train
    row, so an evaluation row stays where its file put it and no repeat straddles two splits. Returns the splits and
    how many rows were removed."""
    seen: set[tuple[str, ...]] = set()
    kept = {}
    for split in sorted(found, key=("test", "dev", "train").index):
        kept[split] = []
        for example in found[split]:
            key = tuple(texts_of(example))
            if key not in seen:
                seen.add(key)
                kept[split].append(example)
    removed = sum(map(len, found.values())) - sum(map(len, kept.values()))
    return {split: kept[split] for split in found}, removed


def majority_rate(examples: list[Example]) -> float:
    """The share of the most frequent label (class, or right candidate's place) among `examples`: the accuracy of
    always predicting it (a regression target has none)."""
    labels = [example.label for example in examples]
    return max(labels.count(label) for label in set(labels)) / len(labels)


def make_splits(found: dict[str, list[Example]], task: str, seed: int, dev_fraction: float,
                test_fraction: float, fractions: dict[str, float] | None = None,
                carve_as: str | None = None) -> dict[str, list[Example]]:
    """Fill in missing dev/test splits deterministically from train (seeded shuffle, then slice); a task's
    own `fractions` override dev_fraction and test_fraction. `carve_as` names the task whose shuffle to use (a task
    scored with another's model, TaskSpec.model_of: the same train file cut the same way, so its dev split holds
    no row that model trained on)."""
    if not found.get("train"):
        raise UserError(f"task '{task}': the training split is empty; check its source files in data/raw")
    splits = {name: list(examples) for name, examples in found.items() if examples}
    if "test" not in splits and "dev" in splits:
        splits["test"] = splits.pop("dev")
    train = splits["train"]
    random.Random(f"{seed}-{carve_as or task}").shuffle(train)
    wanted = [name for name in ("test", "dev") if name not in splits]
    fractions = {"test": test_fraction, "dev": dev_fraction, **(fractions or {})}
    for name in wanted:
        size = max(1, round(len(found["train"]) * fractions[name]))
        if size >= len(train):
            raise UserError(f"task '{task}': {len(found['train'])} training examples are too few to carve a {name} "
                            "split")
        splits[name], train = train[:size], train[size:]
    splits["train"] = train
    return {name: splits[name] for name in SPLITS}
