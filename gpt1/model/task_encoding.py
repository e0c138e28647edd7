"""Task examples -> BPE ids, the one step of fine-tuning's input path that needs the BPE (and with it spaCy and the
corpus clean-up). The encode-task stage and `gpt1 predict` run it. Fine-tuning, layer-transfer and transfer-curve
jobs read what it wrote (gpt1/model/task_tokens.py) and import none of it, so their code fingerprints leave the
tokenizer out: a change to it re-runs the encoding, and the jobs only when the ids it writes change.
"""

from __future__ import annotations

from typing import Sequence

from gpt1.data.records import Example, TaskSpec, check_examples, texts_of
from gpt1.data.task_data import TaskData
from gpt1.model.task_tokens import TaskTokens, TokenizedSplit
from gpt1.model.transforms import EncodedExample, SpecialIds, transform_examples
from gpt1.tokenizer.bpe import Gpt1Bpe


def special_ids(bpe: Gpt1Bpe) -> SpecialIds:
    """The ids of Figure 1's start, delimiter and extract tokens in `bpe`'s vocabulary."""
    return SpecialIds(bpe.special_id("_start_"), bpe.special_id("_delimiter_"), bpe.special_id("_classify_"))


def tokenize_texts(examples: Sequence[Example], bpe: Gpt1Bpe) -> list[list[list[int]]]:
    """Each example's texts (`texts_of` order) as BPE ids, uncut."""
    pieces = [texts_of(example) for example in examples]
    encoded = iter(bpe.encode_many(text for texts in pieces for text in texts))
    return [[next(encoded) for _ in texts] for texts in pieces]


def encode_task(task: str, data: TaskData, bpe: Gpt1Bpe) -> TaskTokens:
    """A task's sampled splits as BPE ids, with what its jobs need of the BPE (the encode-task stage's work)."""
    splits = {split: TokenizedSplit(tokenize_texts(examples, bpe), [example.label for example in examples])
              for split, examples in data.splits.items()}
    return TaskTokens(task, data.spec, splits, dict(data.full_sizes), bpe.vocab_size, special_ids(bpe))


def encode_examples(examples: Sequence[Example], spec: TaskSpec, bpe: Gpt1Bpe, n_ctx: int,
                    where: str = "examples") -> list[EncodedExample]:
    """Check, BPE-encode and transform a split; `where` names it in error messages."""
    check_examples(examples, spec, where)
    return transform_examples(tokenize_texts(examples, bpe), [example.label for example in examples], spec.family,
                              special_ids(bpe), n_ctx)
