"""What one fine-tuning run of a task trains on, for `gpt1 plan`: its training examples and the tokens one epoch
of them feeds the model (every sequence the input transformation makes: both orders of a similarity pair, one
sequence per multiple-choice candidate; gpt1/model/transforms.py).

Read from the prepared task (data/task_tokens/<task>: the sampled training split fine-tuning uses, as token ids)
where it exists; otherwise estimated from TRAIN_ROWS (the size of each registered task's upstream training file,
cut as the prepare stage cuts it) and MEAN_TEXT_TOKENS (an assumed mean length of each text of an example).
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
class TrainRows:
    upstream: int  # rows of the training file as its loader returns them
    carved: tuple[str, ...]  # the splits the prepare stage carves from them (gpt1/data/tasks.py, make_splits)


# Upstream training rows. GLUE's test labels are private: its dev file becomes the test split and a dev split is
# carved from train; sources with labelled dev and test files keep all of train.
TRAIN_ROWS: dict[str, TrainRows] = {
    "cola": TrainRows(8_551, ("dev",)),  # GLUE CoLA train.tsv
    "sst2": TrainRows(67_349, ("dev",)),  # GLUE SST-2 train.tsv
    "mrpc": TrainRows(3_668, ()),  # Microsoft's 4,076 training pairs less GLUE's 408 dev ids
    "stsb": TrainRows(5_749, ("dev",)),  # GLUE STS-B train.tsv
    "qqp": TrainRows(363_846, ("dev",)),  # GLUE QQP train.tsv
    "mnli": TrainRows(392_702, ("dev",)),  # GLUE MNLI train.tsv
    "qnli": TrainRows(104_743, ("dev",)),  # GLUE QNLIv2 train.tsv (GLUE v1's QNLI, the paper's, had 108,436)
    "rte": TrainRows(2_490, ("dev",)),  # GLUE RTE train.tsv
    "snli": TrainRows(549_367, ()),  # SNLI 1.0's 550,152 training pairs less 785 without a gold label
    "scitail": TrainRows(23_097, ()),  # SciTailV1.1 tsv_format train (its SNLI-format files hold 23,596)
    "race": TrainRows(87_866, ()),  # RACE questions: 25,421 middle + 62,445 high school, 4 options each
    "story_cloze": TrainRows(1_871, ("dev",)),  # the spring 2016 validation set, which the paper trains on
    # The embedded default's sources as docs/data.md counts them (train + the splits carved from it)
    "rt_polarity": TrainRows(10_568, ("test", "dev")),
    "snli_100k": TrainRows(99_890, ("dev",)),
    "sts_b": TrainRows(5_749, ()),
    "social_iqa": TrainRows(1_954, ("test", "dev")),
    "vitaminc": TrainRows(54_668, ("test", "dev")),
    "lee_similarity": TrainRows(1_225, ("test", "dev")),
}

# Assumed mean BPE tokens of each text of an example, in texts_of order (context first, then each candidate), before
# truncation: the published mean word counts where we know them (SNLI premise 14.1 and hypothesis 8.3 words,
# Bowman et al. 2015; RACE passage 321.9, question 10.0, option 5.3 words, Lai et al. 2017) and rough typical
# sentence lengths elsewhere, at about 1.3 tokens a word. Rows built from them are marked as estimates.
MEAN_TEXT_TOKENS: dict[str, tuple[int, ...]] = {
    "cola": (11,), "sst2": (13,), "mrpc": (28, 28), "stsb": (14, 14), "qqp": (15, 15), "mnli": (28, 14),
    "qnli": (13, 36), "rte": (60, 12), "snli": (18, 11), "scitail": (26, 16), "race": (432, 7, 7, 7, 7),
    "story_cloze": (47, 12, 12), "rt_polarity": (27,), "snli_100k": (18, 11), "sts_b": (14, 14),
    "social_iqa": (27, 5, 5, 5), "vitaminc": (40, 16), "lee_similarity": (150, 150),
}


@dataclass(frozen=True)
class TaskWork:
    task: str
    examples: int  # training examples a run uses
    tokens_per_epoch: int  # the tokens of every sequence they make, at the model's context
    measured: bool  # True: read from the prepared task; False: estimated from the tables above


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
    """From the tables: the training split left after carving, sampled to `max_train`, each example of the
    assumed mean lengths. `data`: params' data section (its carving fractions)."""
    if task not in TRAIN_ROWS:
        raise UserError(f"no size is known for task {task!r} and it is not prepared; run `dvc repro "
                        f"encode_task@{task}` (or `gpt1 prepare` and `gpt1 encode-task --task {task}`) first")
    rows = TRAIN_ROWS[task]
    fractions = {"test": data.task_test_fraction, "dev": data.task_dev_fraction,
                 **(TASKS[task].carved_fractions or {})}
    train = rows.upstream - sum(carved_size(rows.upstream, fractions[split]) for split in rows.carved)
    examples = train if max_train is None else min(train, max_train)
    texts = [[0] * length for length in MEAN_TEXT_TOKENS[task]]
    return TaskWork(task, examples, examples * sequence_tokens(texts, TASKS[task].spec.family, n_ctx), measured=False)


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
