"""Stage `bpe`: train GPT-1's BPE on the training corpus (or take the released files, bpe.import_from)."""

from __future__ import annotations

import logging
from pathlib import Path

from tqdm import tqdm

from gpt1 import layout
from gpt1.params.schema import Params
from gpt1.tokenizer.bpe import SPECIAL_TOKENS, Gpt1Bpe, count_words, import_released, read_corpus, train_merges

log = logging.getLogger(__name__)


def run(merges: int, corpus: Path = layout.split_jsonl(layout.CORPUS, "train"), out: Path = layout.BPE) -> Gpt1Bpe:
    documents = tqdm(read_corpus(corpus), desc="split words", unit="doc", disable=None)
    word_counts = count_words(documents)
    log.info("%d words, %d distinct; training %d merges", sum(word_counts.values()), len(word_counts), merges)
    base, learned = train_merges(word_counts, merges)
    bpe = Gpt1Bpe.from_merges(base, learned)
    bpe.save(out)
    log.info("vocabulary: %d base symbols + %d merges + %d special tokens = %d",
             len(base), merges, len(SPECIAL_TOKENS), bpe.vocab_size)
    return bpe


def main(args, params: Params) -> None:
    if params.bpe.import_from:
        import_released(Path(params.bpe.import_from), params.bpe.merges, layout.BPE)
    else:
        run(params.bpe.merges)
