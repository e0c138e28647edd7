"""The paragraph dedupe's fingerprint set (gpt1/data/fingerprints.py) answers exactly as a Python set does, across its
merges and for digests numpy's byte strings cannot hold (a trailing zero byte), in a fraction of the memory."""

import hashlib
import random

import numpy as np

from gpt1.data.fingerprints import FingerprintSet


def digests(count: int, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    found = [hashlib.blake2b(str(rng.random()).encode(), digest_size=16).digest() for _ in range(count)]
    return found + [digest[:15] + b"\0" for digest in found[:50]] + [b"\0" * 16]


def test_membership_is_a_python_sets_across_merges():
    reference, fingerprints = set(), FingerprintSet(buffer=64)  # a merge every 64 additions
    stream = digests(3_000, seed=1)
    stream += stream[::7]  # repeats, as duplicate paragraphs are
    for digest in stream:
        assert (digest in fingerprints) == (digest in reference)
        if digest not in reference:
            reference.add(digest)
            fingerprints.add(digest)
    assert len(fingerprints) == len(reference)
    for digest in digests(500, seed=2)[:500]:  # never added
        assert digest not in fingerprints
    truncated = next(d for d in reference if not d.endswith(b"\0"))[:15] + b"\0"
    assert (truncated in fingerprints) == (truncated in reference)  # never matched by the array's truncation


def test_merged_fingerprints_take_sixteen_bytes_each():
    fingerprints = FingerprintSet(buffer=1_000)
    for digest in digests(10_000, seed=3)[:10_000]:
        if digest not in fingerprints:
            fingerprints.add(digest)
    assert fingerprints._sorted.nbytes <= 16 * 10_000 and len(fingerprints._recent) < 1_000
    assert np.all(fingerprints._sorted[:-1] <= fingerprints._sorted[1:])
