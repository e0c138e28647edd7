"""Stage `tokenize`: corpus splits -> flat binary token arrays that pretraining memory-maps."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from gpt1.files.atomic import atomic_directory
from gpt1 import layout
from gpt1.params.schema import Params
from gpt1.tokenizer.bpe import Gpt1Bpe
from gpt1.tokenizer.encode import SPLITS, encode_split, encoders, token_dtype

log = logging.getLogger(__name__)


def run(corpus: Path = layout.CORPUS, bpe_folder: Path = layout.BPE, out: Path = layout.TOKENS) -> dict:
    bpe = Gpt1Bpe.load(bpe_folder)
    dtype = token_dtype(bpe.vocab_size)
    meta: dict = {"dtype": dtype.name, "vocab_size": bpe.vocab_size}
    with encoders(bpe, dtype) as workers, atomic_directory(out) as staging:  # one set of workers for both splits
        for split in SPLITS:
            stats = encode_split(bpe, layout.split_jsonl(corpus, split), staging / f"{split}.bin", dtype, workers)
            seconds = stats.pop("encode_seconds")
            log.info("%s: %d documents, %d tokens (%.2f characters/token) in %.1f s: %.0f tokens/s",
                     split, stats["documents"], stats["tokens"], stats["characters"] / max(stats["tokens"], 1),
                     seconds, stats["tokens"] / seconds)
            meta[split] = stats  # timings go to the log only, so the outputs stay byte-identical across runs
        (staging / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    return meta


def main(args, params: Params) -> None:
    run()
