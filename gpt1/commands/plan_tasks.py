"""What one fine-tuning run of a task trains on, for `gpt1 plan`: its training examples and the tokens one epoch
of them feeds the model (every sequence the input transformation makes: both orders of a similarity pair, one
sequence per multiple-choice candidate; gpt1/model/transforms.py).

Read from the prepared task (data/task_tokens/<task>: the sampled training split fine-tuning uses, as token ids)
where it exists; otherwise estimated from the task's size in the registry (TaskDefinition.size: the rows of its
upstream training file, cut as the prepare stage cuts it, and an assumed mean length of each text of an example).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from gpt1 import layout
from gpt1.data.registry import TASKS
from gpt1.errors import UserError
from gpt1.model.task_tokens import INFO
from gpt1.model.transforms import SpecialIds, build_sequences


@dataclass(frozen=True)
class TaskWork:
    task: str
    examples: int  # training examples a run uses
    tokens_per_epoch: int  # the tokens of every sequence they make, at the model's context
    measured: bool  # True: read from the prepared task; False: estimated from the registry's TaskSize


def carved_size(rows: int, fraction: float) -> int:
    """The size of a split carved from `rows` training rows, as make_splits computes it."""
    return max(1, round(rows * fraction))


def sequence_tokens(texts: list[list[int]], family: str, n_ctx: int) -> int:
    """Tokens of the sequences one example makes, cut to `n_ctx` as fine-tuning cuts them."""
    return sum(map(len, build_sequences(texts, family, SpecialIds(0, 0, 0), n_ctx)))


def prepared_work(task: str, folder: Path, n_ctx: int) -> TaskWork:
    """Exact: the sampled training split the prepared task holds, transformed at `n_ctx`."""
    family = json.loads((folder / INFO).read_text())["spec"]["family"]
    examples, tokens = 0, 0
    with open(folder / "train.jsonl", encoding="utf-8") as handle:
        for line in handle:
            examples += 1
            tokens += sequence_tokens(json.loads(line)["texts"], family, n_ctx)
    return TaskWork(task, examples, tokens, measured=True)


def estimated_work(task: str, data, max_train: int | None, n_ctx: int) -> TaskWork:
    """From the task's size in the registry: the training split left after carving, sampled to `max_train`, each
    example of the assumed mean lengths. `data`: params' data section (its carving fractions)."""
    definition = TASKS.get(task)
    if definition is None or definition.size is None:
        raise UserError(f"no size is known for task {task!r} and it is not prepared; run `dvc repro "
                        f"encode_task@{task}` (or `gpt1 prepare` and `gpt1 encode-task --task {task}`) first")
    size = definition.size
    fractions = {"test": data.task_test_fraction, "dev": data.task_dev_fraction, **(definition.carved_fractions or {})}
    train = size.train_rows - sum(carved_size(size.train_rows, fractions[split]) for split in size.carved)
    examples = train if max_train is None else min(train, max_train)
    texts = [[0] * length for length in size.mean_text_tokens]
    return TaskWork(task, examples, examples * sequence_tokens(texts, definition.spec.family, n_ctx), measured=False)


def trained_tasks(params) -> tuple[list[str], list[str]]:
    """(the tasks that train a model of their own: data.tasks, the tasks scored with another task's models, which
    come with it: mnli_mm with mnli)."""
    return list(params.data.tasks), [task for task in params.data.scored_tasks if task not in params.data.tasks]


def task_work(task: str, params, root: Path = layout.TASK_TOKENS) -> TaskWork:
    """One task's training work for params' model context and finetune.max_train_examples."""
    folder = layout.task_tokens(task, root)
    n_ctx = params.model.n_positions  # the LSTM is fine-tuned at the Transformer's context too
    if (folder / INFO).is_file() and (folder / "train.jsonl").is_file():
        return prepared_work(task, folder, n_ctx)
    return estimated_work(task, params.data, params.finetune.max_train_examples, n_ctx)
