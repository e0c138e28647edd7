"""Task examples -> BPE ids, the one step of fine-tuning's input path that needs the BPE (and with it spaCy and the
corpus clean-up). The encode-task stage and `gpt1 predict` run it. Fine-tuning, layer-transfer and transfer-curve
jobs read what it wrote (gpt1/model/task_tokens.py) and import none of it, so their code fingerprints leave the
tokenizer out: a change to it re-runs the encoding, and the jobs only when the ids it writes change.

The texts go through the tokenize stage's `PieceEncoder` (each distinct piece split and encoded once while it stays
in its bounded cache), a batch of examples at a time, and the stage writes each row as it comes: what it holds is
the task's examples and one batch's ids, never every row's ids as Python lists.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from gpt1.data.cleanup import clean
from gpt1.data.records import Example, TaskSpec, check_examples, texts_of
from gpt1.data.task_data import TaskData
from gpt1.model.task_tokens import TaskTokens, TokenizedSplit, write_task_tokens
from gpt1.model.transforms import EncodedExample, SpecialIds, transform_examples
from gpt1.tokenizer.bpe import Gpt1Bpe
from gpt1.tokenizer.encode import PieceEncoder

_BATCH = 2048  # examples encoded together: their distinct pieces go to spaCy in one call
# spaCy keeps a lexeme in C memory beside each string its vocabulary has met, which makes most of a large task's
# peak beyond its examples; a task's splitter is renewed sooner than a corpus's, since renewing costs a fraction of
# a second and leaves the words as they are (docs/measurements/evaluation-scale.json: bytes_per_training_row).
_TASK_SPLITTER_RENEW_AT = 100_000


def task_encoder(bpe: Gpt1Bpe) -> PieceEncoder:
    bpe.splitter.renew_at = _TASK_SPLITTER_RENEW_AT  # this splitter's, not the class's: bpe and tokenize keep theirs
    return PieceEncoder(bpe, np.int32)


def special_ids(bpe: Gpt1Bpe) -> SpecialIds:
    """The ids of Figure 1's start, delimiter and extract tokens in `bpe`'s vocabulary."""
    return SpecialIds(bpe.special_id("_start_"), bpe.special_id("_delimiter_"), bpe.special_id("_classify_"))


def encoded_texts(examples: Sequence[Example], encoder: PieceEncoder) -> Iterator[list[list[int]]]:
    """Each example's texts (`texts_of` order) as BPE ids, uncut, the ids `Gpt1Bpe.encode` gives each text."""
    for start in range(0, len(examples), _BATCH):
        batch = [texts_of(example) for example in examples[start:start + _BATCH]]
        ids = iter(encoder.encode([clean(text) for texts in batch for text in texts]))
        for texts in batch:
            yield [next(ids).tolist() for _ in texts]


def _rows(examples: Sequence[Example], encoder: PieceEncoder) -> Iterator[tuple[list[list[int]], float]]:
    return zip(encoded_texts(examples, encoder), (example.label for example in examples))


def _header(task: str, data: TaskData, bpe: Gpt1Bpe) -> TaskTokens:
    """The task's tokens without rows: what tokens.json holds."""
    return TaskTokens(task, data.spec, {}, dict(data.full_sizes), bpe.vocab_size, special_ids(bpe))


def write_task(task: str, data: TaskData, bpe: Gpt1Bpe, folder: Path) -> dict[str, int]:
    """The encode-task stage's work: a task's sampled splits as BPE ids into `folder` (gpt1/model/task_tokens.py's
    layout), streamed; the rows written per split."""
    encoder = task_encoder(bpe)
    return write_task_tokens(folder, _header(task, data, bpe).header(),
                             {split: _rows(examples, encoder) for split, examples in data.splits.items()})


def encode_task(task: str, data: TaskData, bpe: Gpt1Bpe) -> TaskTokens:
    """What `write_task` writes, held in memory (`TaskTokens.load` of its folder gives the same)."""
    encoder = task_encoder(bpe)
    splits = {split: TokenizedSplit(list(encoded_texts(examples, encoder)), [example.label for example in examples])
              for split, examples in data.splits.items()}
    return TaskTokens(task, data.spec, splits, dict(data.full_sizes), bpe.vocab_size, special_ids(bpe))


def encode_examples(examples: Sequence[Example], spec: TaskSpec, bpe: Gpt1Bpe, n_ctx: int,
                    where: str = "examples") -> list[EncodedExample]:
    """Check, BPE-encode and transform a split; `where` names it in error messages."""
    check_examples(examples, spec, where)
    texts = list(encoded_texts(examples, task_encoder(bpe)))
    return transform_examples(texts, [example.label for example in examples], spec.family, special_ids(bpe), n_ctx)
