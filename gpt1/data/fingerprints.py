"""A set of paragraph fingerprints that stays small as the corpus grows: the paragraph dedupe's memory and speed.

A Python set of 16-byte digests holds a bytes object and a slot for each paragraph, several times the digest
itself, and a BooksCorpus-sized text has millions of paragraphs. Here the digests live in one sorted numpy array
of 16-byte strings (16 bytes a paragraph), with the newest in a few small sorted runs that are merged into it whenever
they fill. A chunk's paragraphs are looked up together, in numpy, not one Python call each: the dedupe runs in the
process that writes the corpus, where every call per paragraph is time the worker processes wait. Exact, as a Python
set: the same paragraphs are kept and dropped.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

FINGERPRINT_BYTES = 16
# numpy's fixed-width byte strings: all 16 bytes of every digest are held and compared (a trailing zero byte too, as
# every digest has the same length).
_DTYPE = f"S{FINGERPRINT_BYTES}"
BUFFER = 1 << 20  # fingerprints held in the recent runs before a merge into the main array
RUNS = 16  # recent runs before they are merged into one (each lookup searches every run)


class FingerprintSet:
    """`first_seen(batch)`: which fingerprints of the batch, in order, occur neither earlier in it nor in an earlier
    batch; they are added. Exact, ~16 bytes an entry."""

    def __init__(self, buffer: int = BUFFER):
        self._sorted = np.empty(0, dtype=_DTYPE)
        self._recent: list[np.ndarray] = []
        self._buffer = buffer

    def first_seen(self, fingerprints: Sequence[bytes]) -> np.ndarray:
        if not set(map(len, fingerprints)) <= {FINGERPRINT_BYTES}:
            raise ValueError(f"fingerprints must be {FINGERPRINT_BYTES} bytes each")
        batch = np.frombuffer(b"".join(fingerprints), dtype=_DTYPE)
        new = np.zeros(len(batch), dtype=bool)
        new[np.unique(batch, return_index=True)[1]] = True  # the first of each value within the batch
        for known in (self._sorted, *self._recent):
            new[new] = ~_in_sorted(batch[new], known)
        if new.any():
            self._recent.append(np.sort(batch[new]))
            self._tidy()
        return new

    def __len__(self) -> int:
        return len(self._sorted) + sum(len(run) for run in self._recent)

    def _tidy(self) -> None:
        if sum(len(run) for run in self._recent) >= self._buffer:
            self._sorted = np.concatenate([self._sorted, *self._recent])
            self._sorted.sort()  # in place: two copies of the fingerprints at most, not three
            self._recent = []
        elif len(self._recent) > RUNS:
            self._recent = [np.sort(np.concatenate(self._recent))]


def _in_sorted(values: np.ndarray, known: np.ndarray) -> np.ndarray:
    if not len(known):
        return np.zeros(len(values), dtype=bool)
    index = np.minimum(np.searchsorted(known, values), len(known) - 1)
    return known[index] == values
