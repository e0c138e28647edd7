"""The tokenized corpus as `gpt1 tokenize` writes it (data/tokens): each split's token array, which pretraining
memory-maps, and its record (meta.json), whose training split's tokens the stages that resolve pretrain.epochs into
updates hand to the schedule (gpt1/params/schedule.py); they declare data/tokens as a dependency. Reading needs
neither the BPE nor the text workers that wrote them (gpt1/tokenizer/encode.py), so pretraining runs neither."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from gpt1.errors import UserError
from gpt1.layout import TOKENS_META


def load_tokens(folder: Path, split: str) -> np.memmap:
    """Memory-map a split `gpt1 tokenize` wrote (numpy cannot map an empty file: that is said in one line)."""
    meta = json.loads((Path(folder) / "meta.json").read_text())
    path = Path(folder) / f"{split}.bin"
    if path.is_file() and path.stat().st_size == 0:
        raise UserError(f"{path} holds no tokens: the corpus's {split} split is empty; give the corpus more text "
                        "(data.corpus, data.local_paths.books) or raise data.corpus_val_fraction, then re-run from "
                        "`gpt1 prepare`")
    return np.memmap(path, dtype=np.dtype(meta["dtype"]), mode="r")


def training_tokens(meta: Path = TOKENS_META) -> int | None:
    """The tokenized training split's tokens, or None before `gpt1 tokenize` has run."""
    if not Path(meta).is_file():
        return None
    return int(json.loads(Path(meta).read_text(encoding="utf-8"))["train"]["tokens"])
