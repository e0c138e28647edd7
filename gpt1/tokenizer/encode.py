"""Stage `tokenize`: corpus splits -> flat binary token arrays that pretraining memory-maps.

Documents are concatenated (GPT-1 trains on contiguous text), separated by GPT-1's line-break token.
"""

from __future__ import annotations

import itertools
import json
import logging
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

from gpt1.errors import UserError
from gpt1.tokenizer.bpe import END_OF_WORD, Gpt1Bpe, read_corpus

log = logging.getLogger(__name__)
SPLITS = ("train", "val")


def token_dtype(vocab_size: int) -> np.dtype:
    return np.dtype(np.uint16) if vocab_size <= np.iinfo(np.uint16).max + 1 else np.dtype(np.uint32)


def load_tokens(folder: Path, split: str) -> np.memmap:
    """Memory-map a split written by this stage (numpy cannot map an empty file: that is said in one line)."""
    meta = json.loads((Path(folder) / "meta.json").read_text())
    path = Path(folder) / f"{split}.bin"
    if path.is_file() and path.stat().st_size == 0:
        raise UserError(f"{path} holds no tokens: the corpus's {split} split is empty; give the corpus more text "
                        "(data.corpus, data.local_paths.books) or raise data.corpus_val_fraction, then re-run from "
                        "`gpt1 prepare`")
    return np.memmap(path, dtype=np.dtype(meta["dtype"]), mode="r")


def encode_split(bpe: Gpt1Bpe, corpus: Path, destination: Path, dtype: np.dtype) -> dict:
    """Stream one split's documents through the BPE into `destination`: memory stays flat whatever the
    corpus size (BooksCorpus is ~5 GB of text), since the tokenizer only buffers its current batch."""
    separator = bpe.encoder.get("\n" + END_OF_WORD)
    started, documents, tokens, characters = time.perf_counter(), 0, 0, 0
    to_encode, to_measure = itertools.tee(read_corpus(corpus))  # one pass over the file
    with open(destination, "wb") as out:
        encoded = bpe.encode_many(to_encode, already_clean=True)  # prepare already ran GPT-1's clean-up
        for document, ids in tqdm(zip(to_measure, encoded), desc=f"encode {corpus.stem}", unit="doc",
                                  disable=None):
            documents += 1
            if separator is not None and tokens:
                ids = [separator, *ids]
            np.asarray(ids, dtype=dtype).tofile(out)
            tokens += len(ids)
            characters += len(document)
    seconds = time.perf_counter() - started
    return {"documents": documents, "tokens": tokens, "characters": characters,
            "encode_seconds": seconds}
