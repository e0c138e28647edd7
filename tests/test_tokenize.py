"""Stage tokenize: corpus splits -> memory-mapped token arrays that decode back to the text."""

import json
import os
import signal

import numpy as np
import pytest

from gpt1.stages import bpe as bpe_stage
from gpt1.stages import tokenize as tokenize_stage
from gpt1.tokenizer import bpe as bpe_module
from gpt1.files import parallel
from gpt1.files import tokens_meta
from gpt1.tokenizer import encode
from gpt1.data.cleanup import clean


def _corpus(folder, documents):
    folder.mkdir(parents=True)
    for split, docs in (("train", documents[:-2]), ("val", documents[-2:])):
        lines = [json.dumps({"part": "test", "text": clean(d)}) for d in docs]
        (folder / f"{split}.jsonl").write_text("\n".join(lines) + "\n")


def test_token_arrays_round_trip(english_documents, tmp_path):
    _corpus(tmp_path / "corpus", english_documents)
    trained = bpe_stage.run(300, corpus=tmp_path / "corpus/train.jsonl", out=tmp_path / "bpe")
    meta = tokenize_stage.run(corpus=tmp_path / "corpus", bpe_folder=tmp_path / "bpe", out=tmp_path / "tokens")

    assert meta["dtype"] == "uint16" and meta["vocab_size"] == trained.vocab_size
    val = tokens_meta.load_tokens(tmp_path / "tokens", "val")
    assert isinstance(val, np.memmap) and val.dtype == np.uint16
    assert len(val) == meta["val"]["tokens"] == (tmp_path / "tokens/val.bin").stat().st_size // 2
    # The two validation documents, joined by GPT-1's line-break token, decode to their words.
    separator = trained.encoder["\n</w>"]
    first, second = trained.encode(english_documents[-2]), trained.encode(english_documents[-1])
    assert val.tolist() == first + [separator] + second
    assert int(val.max()) < trained.vocab_size


def test_dtype_widens_for_large_vocabularies():
    assert encode.token_dtype(65_536) == np.uint16
    assert encode.token_dtype(65_537) == np.uint32


def _lengths(texts):  # a worker's job in the tests below (module level: worker processes import it)
    return [len(text) for text in texts]


def test_documents_stream_through_the_workers_in_order():
    """The paper profile's corpus is ~5 GB of text: a split is never read into memory whole, and the workers'
    results come back in the documents' order."""
    read = []

    def counting_reader():
        for i in range(5_000):
            read.append(i)
            yield "x" * (i % 7)

    results, read_when_yielded = [], []
    for result in parallel.ordered_map(_lengths, counting_reader(), workers=2):
        results.extend(result)
        read_when_yielded.append(len(read))
    assert results == [i % 7 for i in range(5_000)]
    chunk = parallel.CHUNK_DOCUMENTS
    ahead = [read_now - chunk * (done + 1) for done, read_now in enumerate(read_when_yielded)]
    assert max(ahead) <= parallel.READ_AHEAD * 2 * chunk


def test_chunks_end_at_a_size_in_characters_too():
    assert [len(c) for c in parallel.chunks(["ab", "cd", "e", "fgh"], documents=3, characters=4)] == [2, 2]
    assert [len(c) for c in parallel.chunks(["a"] * 7, documents=3, characters=100)] == [3, 3, 1]


@pytest.mark.slow
def test_workers_write_the_bytes_one_process_writes(english_documents, tmp_path):
    """Tokens and word counts do not depend on how many processes made them (several chunks of documents). Each
    document is a few hundred characters: a chunk ends at a count of documents, whatever their length."""
    documents = [clean(f"{i}: {text[:400]}") for i in range(3) for text in english_documents] * 20
    assert len(documents) > 2 * parallel.CHUNK_DOCUMENTS
    corpus = tmp_path / "train.jsonl"
    corpus.write_text("".join(json.dumps({"text": text}) + "\n" for text in documents))
    assert bpe_module.count_words(documents, workers=2) == bpe_module.count_words(documents, workers=1)
    trained = bpe_stage.run(300, corpus=corpus, out=tmp_path / "bpe")
    for workers in (1, 2):
        with encode.encoders(trained, np.dtype(np.uint16), workers) as pool:
            for split in ("a", "b"):  # one set of workers serves several splits, as in the tokenize stage
                stats = encode.encode_split(trained, corpus, tmp_path / f"{workers}{split}.bin", np.dtype(np.uint16),
                                            pool)
                assert stats["documents"] == len(documents)
                assert stats["characters"] == sum(map(len, documents))
    written = {name: np.fromfile(tmp_path / f"{name}.bin", dtype=np.uint16).tolist() for name in ("1a", "1b", "2a", "2b")}
    one = written["1a"]
    assert all(tokens == one for tokens in written.values()) and len(one) == stats["tokens"]
    separator = trained.encoder["\n</w>"]
    assert one[: len(trained.encode(documents[0])) + 1] == trained.encode(documents[0]) + [separator]


KILL_MARK = "a worker that reads this is killed"


def _killed_by_the_mark(texts):  # a worker's job: SIGKILL, as the out-of-memory killer sends, on the marked chunk
    if any(KILL_MARK in text for text in texts):
        os.kill(os.getpid(), signal.SIGKILL)
    return _lengths(texts)


def _alarm(seconds):
    """Fail the test, rather than hang it, if the stage waits for a dead worker."""
    def expired(*_):
        raise TimeoutError(f"still waiting after {seconds} s")
    signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)


_encode_chunk = encode._encode_chunk


def _killed_or_encoded(texts):  # the stage's own job, but killed on the marked chunk
    if any(KILL_MARK in text for text in texts):
        os.kill(os.getpid(), signal.SIGKILL)
    return _encode_chunk(texts)


def test_a_killed_worker_fails_the_work_at_once_and_names_the_signal():
    texts = ["x"] * (3 * parallel.CHUNK_DOCUMENTS) + [KILL_MARK] + ["y"] * (3 * parallel.CHUNK_DOCUMENTS)
    _alarm(60)
    try:
        with pytest.raises(parallel.WorkerDied, match="SIGKILL.*out-of-memory"):
            list(parallel.ordered_map(_killed_by_the_mark, texts, workers=2))
    finally:
        signal.alarm(0)


def test_a_killed_worker_fails_the_tokenize_stage_and_publishes_nothing(english_documents, tmp_path, monkeypatch):
    documents = [f"{i} {text[:200]}" for i, text in enumerate(english_documents * 40)]
    documents[len(documents) // 2] += " " + KILL_MARK
    _corpus(tmp_path / "corpus", documents)
    bpe_stage.run(50, corpus=tmp_path / "corpus/train.jsonl", out=tmp_path / "bpe")
    monkeypatch.setattr(encode, "_encode_chunk", _killed_or_encoded)
    _alarm(120)
    try:
        with pytest.raises(parallel.WorkerDied, match="SIGKILL"):
            tokenize_stage.run(corpus=tmp_path / "corpus", bpe_folder=tmp_path / "bpe", out=tmp_path / "tokens")
    finally:
        signal.alarm(0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bpe", "corpus"]  # no tokens/, no temporary beside it


def test_a_job_that_cannot_be_pickled_fails_at_once_and_the_process_ends():
    """The pool would wait for ever for the result of a job that never reached a worker. A race decides whether it
    does, so eight processes try, each apart, so that a hang fails this test by its timeout instead of holding the
    suite's process at its exit."""
    import subprocess
    import sys

    program = ("from gpt1.files import parallel\n"
               "try:\n"
               "    list(parallel.ordered_map(lambda chunk: len(chunk), ['x'] * 2000, workers=2))\n"
               "except Exception as error:\n"
               "    print(type(error).__name__)\n")
    tries = [subprocess.Popen([sys.executable, "-c", program], stdout=subprocess.PIPE, text=True) for _ in range(8)]
    try:
        printed = [attempt.communicate(timeout=60)[0].split() for attempt in tries]
    finally:
        for attempt in tries:
            attempt.kill()
    assert printed == [["PicklingError"]] * 8
