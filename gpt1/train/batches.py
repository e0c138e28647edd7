"""Pretraining data: contiguous token windows from the memory-mapped corpus, and the unigram baseline.

GPT-1 trains on "contiguous sequences of 512 tokens". The sampler cuts the training split into windows of
`length + 1` tokens (inputs plus the next-token targets) at a random offset per epoch and visits them in a
random order per epoch. Both come from the seed and the epoch number alone, so the whole data stream is a
pure function of one integer, the number of sequences consumed so far: that integer is the data position a
resume checkpoint stores, and every distributed rank derives its own share of a batch from it.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import torch

from gpt1.errors import UserError


class WindowSampler:
    """Sequence number i (0, 1, 2, ...) -> one window; epochs follow each other without a gap."""

    def __init__(self, tokens: np.ndarray, length: int, seed: int):
        self.tokens = tokens
        self.length = length
        self.seed = seed
        # One window fewer than fits, so that any offset in [0, length) still leaves room for the last one.
        self.windows_per_epoch = len(tokens) // length - 1
        if self.windows_per_epoch < 1:
            raise UserError(f"the training split has {len(tokens)} tokens, too few for windows of {length} "
                            f"(model.n_positions); it needs at least {2 * length}: use more corpus or a "
                            "shorter context")
        self._epoch = lru_cache(maxsize=2)(self._epoch_layout)

    def _epoch_layout(self, epoch: int) -> tuple[int, np.ndarray]:
        rng = np.random.default_rng([self.seed, epoch])
        offset = int(rng.integers(self.length))
        return offset, rng.permutation(self.windows_per_epoch)

    def starts(self, first: int, count: int) -> np.ndarray:
        """Token offsets of sequences first, first + 1, ..., first + count - 1."""
        starts = np.empty(count, dtype=np.int64)
        for slot, sequence in enumerate(range(first, first + count)):
            epoch, index = divmod(sequence, self.windows_per_epoch)
            offset, order = self._epoch(epoch)
            starts[slot] = offset + int(order[index]) * self.length
        return starts

    def batch(self, first: int, count: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(inputs, targets), each (count, length) int64; targets[:, t] is the token after inputs[:, t]."""
        return windows_to_batch(self.tokens, self.starts(first, count), self.length)


def windows_to_batch(tokens: np.ndarray, starts: np.ndarray, length: int) -> tuple[torch.Tensor, torch.Tensor]:
    windows = np.stack([np.asarray(tokens[start:start + length + 1], dtype=np.int64) for start in starts])
    windows = torch.from_numpy(windows)
    return windows[:, :-1], windows[:, 1:]


def evaluation_starts(tokens: np.ndarray, length: int, eval_tokens: int) -> np.ndarray:
    """A fixed set of validation windows (no randomness): eval_tokens // length of them, spread evenly over
    the split, capped at as many as fit without overlapping."""
    available = (len(tokens) - 1) // length
    if available < 1:
        raise UserError(f"the validation split has {len(tokens)} tokens, too few for one window of {length} "
                        "(model.n_positions); raise data.corpus_val_fraction or shorten the context")
    count = max(1, min(eval_tokens // length, available))
    return np.linspace(0, len(tokens) - length - 1, count).round().astype(np.int64)


# Tokens counted at a time. np.bincount copies its input to int64, 8 bytes a token: counting a uint16 corpus
# whole would add four times its size to every rank's memory; in chunks the copy stays under 128 MB.
COUNT_CHUNK_TOKENS = 1 << 24


def token_counts(tokens: np.ndarray, vocab_size: int, chunk_tokens: int = COUNT_CHUNK_TOKENS) -> np.ndarray:
    """How often each id in [0, vocab_size) occurs (int64; exact, the same as one np.bincount of the whole),
    counted `chunk_tokens` at a time so that the extra memory is bounded whatever the corpus size."""
    counts = np.zeros(vocab_size, dtype=np.int64)
    highest = -1
    for start in range(0, len(tokens), chunk_tokens):
        chunk = np.bincount(np.asarray(tokens[start:start + chunk_tokens]), minlength=vocab_size)
        highest = max(highest, len(chunk) - 1)
        if len(chunk) == vocab_size:
            counts += chunk
    if highest >= vocab_size:
        raise UserError(f"the training tokens hold ids up to {highest}, beyond vocab_size {vocab_size}; re-run "
                        "the tokenize stage")
    return counts


def unigram_perplexity(train: np.ndarray, val: np.ndarray, starts: np.ndarray, length: int,
                       vocab_size: int) -> float:
    """Perplexity on the evaluation targets of a unigram model of the training split (add-one smoothing):
    the score any language model must clearly beat."""
    counts = token_counts(train, vocab_size).astype(np.float64)
    log_probabilities = np.log(counts + 1.0) - math.log(counts.sum() + vocab_size)
    targets = np.concatenate([np.asarray(val[start + 1:start + length + 1]) for start in starts])
    return float(math.exp(-log_probabilities[targets.astype(np.int64)].mean()))
