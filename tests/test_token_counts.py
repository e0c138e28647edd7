"""Counting the training tokens for the unigram baseline (gpt1/train/batches.py) in bounded memory."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from gpt1.errors import UserError
from gpt1.train.batches import COUNT_CHUNK_TOKENS, token_counts


def test_counting_in_chunks_equals_counting_the_whole():
    tokens = np.random.default_rng(0).integers(0, 300, 10_007).astype(np.uint16)
    whole = np.bincount(tokens, minlength=300)
    for chunk_tokens in (1, 1000, 4096, 10_007, 1 << 20):
        counts = token_counts(tokens, 300, chunk_tokens=chunk_tokens)
        assert counts.dtype == np.int64 and np.array_equal(counts, whole)
    assert np.array_equal(token_counts(tokens[:0], 300), np.zeros(300, dtype=np.int64))


def test_an_id_beyond_the_vocabulary_is_named_even_in_a_later_chunk():
    tokens = np.array([1, 2, 3, 9, 7, 12], dtype=np.uint16)
    with pytest.raises(UserError, match="ids up to 12, beyond vocab_size 10; re-run the tokenize stage"):
        token_counts(tokens, 10, chunk_tokens=2)


def test_counting_a_large_corpus_adds_a_bounded_amount_of_memory():
    tokens = np.zeros(20_000_000, dtype=np.uint16)  # 40 MB; one bincount of it would copy 160 MB to int64
    tokens[::7] = 9_000
    bound = 8 * COUNT_CHUNK_TOKENS + (1 << 20)  # one chunk's int64 copy, plus the counts
    assert 8 * len(tokens) > bound
    tracemalloc.start()
    try:
        counts = token_counts(tokens, 40_481)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < bound
    assert counts[9_000] == len(range(0, len(tokens), 7)) and counts.sum() == len(tokens)
