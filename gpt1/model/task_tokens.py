"""A task's examples as BPE ids, encoded once (stage `encode_task`) and read by every fine-tuning job of it.

Each split is the seeded sample fine-tuning uses (gpt1/data/task_data.py), each example's texts as token ids in
`texts_of` order, not yet cut: the input transformation and its truncation depend on the starting model's
context, and are applied when a job reads them (`TaskTokens.encoded`). Beside them, what a job needs of the
task and the BPE: the task's spec, the sizes of its split files, the vocabulary size and the special ids. A job
then loads no BPE and no spaCy, and depends on its own task's tokens rather than on every task and the BPE.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from gpt1.files.atomic import atomic_directory
from gpt1.data.records import SPLITS, TaskSpec
from gpt1.errors import UserError
from gpt1.layout import split_jsonl
from gpt1.model.transforms import EncodedExample, SpecialIds, transform_examples

INFO = "tokens.json"  # the spec, the split files' sizes, the vocabulary and special ids


@dataclass(frozen=True)
class TokenizedSplit:
    texts: list[list[list[int]]]  # per example, per text: token ids
    labels: list[float]

    def __len__(self) -> int:
        return len(self.labels)


@dataclass(frozen=True)
class TaskTokens:
    task: str
    spec: TaskSpec
    splits: dict[str, TokenizedSplit]
    full_sizes: dict[str, int]  # rows in each split file before sampling (model cards say both)
    vocab_size: int
    special: SpecialIds

    def encoded(self, n_ctx: int) -> dict[str, list[EncodedExample]]:
        """The splits as the model's input sequences for a context of `n_ctx` tokens (Figure 1's transformations)."""
        return {split: transform_examples(tokens.texts, tokens.labels, self.spec.family, self.special, n_ctx)
                for split, tokens in self.splits.items()}

    def save(self, folder: Path) -> None:
        """The folder `write_task_tokens` writes, from these tokens."""
        write_task_tokens(folder, self.header(), {split: zip(tokens.texts, tokens.labels)
                                                  for split, tokens in self.splits.items()})

    def header(self) -> dict:
        """tokens.json's content: everything but the rows."""
        return {"task": self.task, "spec": json.loads(self.spec.to_json()), "full_sizes": self.full_sizes,
                "vocab_size": self.vocab_size, "special": dataclasses.asdict(self.special)}

    @classmethod
    def load(cls, folder: Path) -> "TaskTokens":
        folder = Path(folder)
        info = _info(folder)
        splits = {}
        for split in SPLITS:
            rows = [json.loads(line) for line in split_jsonl(folder, split).read_text().splitlines()]
            splits[split] = TokenizedSplit([row["texts"] for row in rows], [row["label"] for row in rows])
        return cls(info["task"], TaskSpec.from_dict(info["spec"]), splits, info["full_sizes"], info["vocab_size"], SpecialIds(**info["special"]))


def write_task_tokens(folder: Path, header: dict,
                      rows: Mapping[str, Iterable[tuple[Sequence[Sequence[int]], float]]]) -> dict[str, int]:
    """<split>.jsonl (one {"texts", "label"} per example, written as each row comes, so that a large task is never
    held whole) and tokens.json (`header`), the folder whole or not at all; the rows written per split."""
    counts = {}
    with atomic_directory(folder) as staging:
        for split, split_rows in rows.items():
            with split_jsonl(staging, split).open("w", encoding="utf-8") as handle:
                counts[split] = 0
                for texts, label in split_rows:
                    handle.write(json.dumps({"texts": texts, "label": label}) + "\n")
                    counts[split] += 1
        (staging / INFO).write_text(json.dumps(header, indent=2, sort_keys=True) + "\n")
    return counts


def _info(folder: Path) -> dict:
    if not (folder / INFO).is_file():
        # not `gpt1 encode-task --task <folder>`: a task scored with another's model is encoded by that task's job
        raise UserError(f"{folder / INFO} not found; run `dvc repro encode_task` (it encodes every task of "
                        "data.tasks)")
    return json.loads((folder / INFO).read_text())


def read_spec(folder: Path) -> TaskSpec:
    """The spec of the task encoded in `folder`, without reading its tokens."""
    return TaskSpec.from_dict(_info(Path(folder))["spec"])
