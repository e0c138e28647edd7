"""A set of paragraph fingerprints that stays small as the corpus grows: the paragraph dedupe's memory.

A Python set of 16-byte digests holds a bytes object and a slot for each paragraph, several times the digest
itself, and a BooksCorpus-sized text has millions of paragraphs. Here the digests live in one sorted numpy array
of 16-byte strings (16 bytes a paragraph), with the newest in a small Python set that is merged into the array whenever it fills. Membership is
exact, as the set's: the same paragraphs are kept and dropped.
"""

from __future__ import annotations

import numpy as np

FINGERPRINT_BYTES = 16
BUFFER = 1 << 20  # fingerprints held in the Python set before a merge: what bounds its memory


class FingerprintSet:
    """`in` and `add` for fixed-size byte strings, exact, ~16 bytes an entry once merged."""

    def __init__(self, buffer: int = BUFFER):
        self._sorted = np.empty(0, dtype=f"S{FINGERPRINT_BYTES}")
        self._recent: set[bytes] = set()
        # numpy's S dtype drops trailing zero bytes (and holds no other length): such digests stay in a set of their
        # own, where they stay exact (1 in 256 of them)
        self._aside: set[bytes] = set()
        self._buffer = buffer

    def __contains__(self, fingerprint: bytes) -> bool:
        if not _fits_array(fingerprint):
            return fingerprint in self._aside
        if fingerprint in self._recent:
            return True
        index = int(np.searchsorted(self._sorted, fingerprint))
        return index < len(self._sorted) and self._sorted[index] == fingerprint

    def add(self, fingerprint: bytes) -> None:
        if not _fits_array(fingerprint):
            self._aside.add(fingerprint)
            return
        self._recent.add(fingerprint)
        if len(self._recent) >= self._buffer:
            self._merge()

    def __len__(self) -> int:
        return len(self._sorted) + len(self._recent) + len(self._aside)

    def _merge(self) -> None:
        recent = np.array(sorted(self._recent), dtype=f"S{FINGERPRINT_BYTES}")
        self._sorted = np.sort(np.concatenate([self._sorted, recent]), kind="stable")
        self._recent = set()


def _fits_array(fingerprint: bytes) -> bool:
    return len(fingerprint) == FINGERPRINT_BYTES and not fingerprint.endswith(b"\0")
