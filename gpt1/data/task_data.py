"""A prepared task's splits, checked and cut to the CPU-sized budget: what fine-tuning and the baselines read.

Kept apart from gpt1.train.finetune so that the baselines stage depends on the data path only, not on the model.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from gpt1.errors import UserError
from gpt1.layout import split_file, task_spec
from gpt1.data.records import SPLITS, Example, TaskSpec, check_examples, read_examples


@dataclass(frozen=True)
class Samples:
    """Which rows of each split fine-tuning and the baselines use: seeded samples of at most these sizes."""
    seed: int  # params' project seed
    max_train: int | None  # finetune.max_train_examples
    max_eval: int | None  # finetune.max_eval_examples (dev and test each)

    @classmethod
    def of(cls, params) -> "Samples":
        """From the validated params (gpt1/params/schema.py; not imported here: the params schema validates
        against this package)."""
        return cls(params.seed, params.finetune.max_train_examples, params.finetune.max_eval_examples)


@dataclass(frozen=True)
class TaskData:
    spec: TaskSpec
    splits: dict[str, list[Example]]  # seeded samples of train, dev and test (seeded_subset)
    full_sizes: dict[str, int]  # rows in each file before subsampling


def load_task_data(samples: Samples, task: str, tasks_dir: Path) -> TaskData:
    """A task's checked splits, cut to `samples` (seeded samples of each split, `seeded_subset`)."""
    spec_file = task_spec(task, tasks_dir)
    if not spec_file.is_file():
        raise UserError(f"{spec_file} not found; run `gpt1 prepare` with '{task}' in data.tasks")
    spec = TaskSpec.from_file(spec_file)
    splits, full_sizes = {}, {}
    for split in SPLITS:
        path = split_file(task, split, tasks_dir)
        if not path.is_file():
            raise UserError(f"{path} not found; run `gpt1 prepare`")
        examples = read_examples(path, spec.family)
        check_examples(examples, spec, str(path))
        full_sizes[split] = len(examples)
        splits[split] = examples
    splits["train"] = seeded_subset(splits["train"], samples.max_train, samples.seed, task, "train")
    for split in ("dev", "test"):
        splits[split] = seeded_subset(splits[split], samples.max_eval, samples.seed, task, split)
    return TaskData(spec=spec, splits=splits, full_sizes=full_sizes)


def training_rows(task: str, tasks_dir: Path, max_train: int | None) -> int:
    """How many training examples fine-tuning uses for a prepared task (what `load_task_data` keeps of its train
    split, finetune.max_train_examples at most), from the file's rows (one an example) without parsing them."""
    with open(split_file(task, "train", tasks_dir), encoding="utf-8") as handle:
        available = sum(1 for _ in handle)
    return available if max_train is None else min(available, max_train)


def seeded_subset(examples: list[Example], limit: int | None, seed: int, task: str, split: str) -> list[Example]:
    """At most `limit` rows of a split: a seeded sample kept in file order. Not the first rows: files are
    often sorted (STS-B's dev and test by genre: captions, then forums, then news), and the
    first rows would stand for one genre only."""
    if limit is None or len(examples) <= limit:
        return examples
    chosen = random.Random(f"{seed}-{task}-{split}").sample(range(len(examples)), limit)
    return [examples[i] for i in sorted(chosen)]
