"""The paragraph dedupe's fingerprint set (gpt1/data/fingerprints.py) answers exactly as a Python set does, across its
merges, for repeats within a batch and for digests with trailing zero bytes, in a fraction of the memory."""

import hashlib
import random

import numpy as np
import pytest

from gpt1.data.fingerprints import FingerprintSet


def digests(count: int, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    found = [hashlib.blake2b(str(rng.random()).encode(), digest_size=16).digest() for _ in range(count)]
    return found + [digest[:15] + b"\0" for digest in found[:50]] + [b"\0" * 16, b"\0" * 15 + b"\1"]


def batches(stream: list[bytes], seed: int) -> list[list[bytes]]:
    rng, cut, found = random.Random(seed), 0, []
    while cut < len(stream):
        size = rng.choice([1, 2, 7, 50, 300])
        found.append(stream[cut:cut + size])
        cut += size
    return found


def test_first_seen_is_a_python_sets_answer_across_merges():
    reference, fingerprints = set(), FingerprintSet(buffer=64)  # a merge every 64 additions
    stream = digests(3_000, seed=1)
    stream += stream[::7] + stream[-60:]  # repeats, as duplicate paragraphs are (those with trailing zeros too)
    random.Random(4).shuffle(stream)
    for batch in batches(stream, seed=5):
        expected = []
        for digest in batch:
            expected.append(digest not in reference)
            reference.add(digest)
        assert fingerprints.first_seen(batch).tolist() == expected
    assert len(fingerprints) == len(reference)
    assert fingerprints.first_seen(digests(500, seed=2)[:500]).all()  # never added: all new
    truncated = next(d for d in reference if not d.endswith(b"\0"))[:15] + b"\0"
    assert fingerprints.first_seen([truncated]).tolist() == [truncated not in reference]


def test_merged_fingerprints_take_sixteen_bytes_each():
    fingerprints = FingerprintSet(buffer=1_000)
    for batch in batches(digests(10_000, seed=3)[:10_000], seed=6):
        fingerprints.first_seen(batch)
    assert fingerprints._sorted.nbytes <= 16 * 10_000 and sum(len(run) for run in fingerprints._recent) < 1_000
    assert np.all(fingerprints._sorted[:-1] < fingerprints._sorted[1:])


def test_a_fingerprint_of_another_length_is_refused():
    with pytest.raises(ValueError, match="16 bytes"):
        FingerprintSet().first_seen([b"short"])
    with pytest.raises(ValueError, match="16 bytes"):
        FingerprintSet().first_seen([b"x" * 15, b"x" * 17])  # 32 bytes in all, still refused
