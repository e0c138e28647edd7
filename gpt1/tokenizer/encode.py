"""Corpus encoding: corpus splits -> flat binary token arrays that pretraining memory-maps (for the `tokenize`
stage; gpt1/files/tokens_meta.py reads them back).

Documents are concatenated (GPT-1 trains on contiguous text), separated by GPT-1's line-break token.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

from gpt1.tokenizer.bpe import END_OF_WORD, Gpt1Bpe, read_corpus
from gpt1.files.parallel import Workers, shared

log = logging.getLogger(__name__)
SPLITS = ("train", "val")


def token_dtype(vocab_size: int) -> np.dtype:
    return np.dtype(np.uint16) if vocab_size <= np.iinfo(np.uint16).max + 1 else np.dtype(np.uint32)


def encoders(bpe: Gpt1Bpe, dtype: np.dtype, count: int | None = None) -> Workers:
    """Worker processes that encode with `bpe` at `dtype` (`count`: default every core this process may use), for
    `encode_split`; one set serves every split."""
    return Workers(count, _start_worker, (bpe.encoder, bpe.merges, dtype))


def encode_split(bpe: Gpt1Bpe, corpus: Path, destination: Path, dtype: np.dtype, workers: Workers | None = None) -> dict:
    """Stream one split's documents through the BPE into `destination`, on `workers` (`encoders(bpe, dtype)`; by
    default of every core; the bytes do not depend on it). Memory stays flat whatever the corpus's size: only a few
    chunks of documents are in flight (gpt1/files/parallel.py)."""
    separator = bpe.encoder.get("\n" + END_OF_WORD)
    started, documents, tokens, characters = time.perf_counter(), 0, 0, 0
    between = np.asarray([] if separator is None else [separator], dtype=dtype)
    with shared(workers, lambda: encoders(bpe, dtype)) as pool, open(destination, "wb") as out:
        encoded = pool.map(_encode_chunk, read_corpus(corpus))
        for chunk in tqdm(encoded, desc=f"encode {corpus.stem}", unit="chunk", disable=None):
            pieces = []
            for ids, length in chunk:
                if tokens:  # a document after the first that has tokens starts with the separator
                    pieces.append(between)
                    tokens += len(between)
                pieces.append(ids)
                tokens += len(ids)
                documents += 1
                characters += length
            np.concatenate(pieces).tofile(out)
    seconds = time.perf_counter() - started
    return {"documents": documents, "tokens": tokens, "characters": characters,
            "encode_seconds": seconds}


class PieceEncoder:
    """Clean text -> token ids, each distinct piece (gpt1/tokenizer/pieces.py) split and encoded once while it stays in
    a cache of at most `limit` pieces (emptied when full), so memory is bounded by the cache, not the corpus.

    A text's words are its pieces' words in order, and the BPE encodes each word alone, so a text's ids are its
    pieces' ids joined: the ids of one occurrence cost a lookup. They are kept as bytes of `dtype`."""

    def __init__(self, bpe: Gpt1Bpe, dtype: np.dtype, limit: int = 1 << 20):
        self.bpe, self.dtype, self.limit = bpe, np.dtype(dtype), limit
        self.cache: dict[str, bytes] = {}

    def encode(self, texts: list[str]) -> list[np.ndarray]:
        cutter = self.bpe.splitter.cutter
        split = [cutter.pieces(text) for text in texts]
        cache = self.cache
        missing = list({piece for pieces in split for piece in pieces if piece not in cache})
        if len(cache) + len(missing) > self.limit:
            cache.clear()
            missing = list({piece for pieces in split for piece in pieces})
        words = self.bpe.splitter.split_pieces(missing)
        with_words = [i for i, piece_words in enumerate(words) if piece_words]
        encodings = self.bpe.hf.encode_batch([words[i] for i in with_words], is_pretokenized=True,
                                             add_special_tokens=False) if with_words else []
        empty = b""
        cache.update((piece, empty) for piece in missing)
        for i, encoding in zip(with_words, encodings):
            cache[missing[i]] = np.asarray(encoding.ids, dtype=self.dtype).tobytes()
        return [np.frombuffer(b"".join(map(cache.__getitem__, pieces)), dtype=self.dtype) for pieces in split]


_worker: PieceEncoder | None = None  # this (worker) process's encoder


def _start_worker(encoder: dict[str, int], merges: list[tuple[str, str]], dtype: np.dtype) -> None:
    global _worker
    _worker = PieceEncoder(Gpt1Bpe(encoder=encoder, merges=merges), dtype)


def _encode_chunk(texts: list[str]) -> list[tuple[np.ndarray, int]]:
    """Each document's ids and its length in characters; prepare already ran GPT-1's clean-up."""
    return [(ids, len(text)) for ids, text in zip(_worker.encode(texts), texts)]
