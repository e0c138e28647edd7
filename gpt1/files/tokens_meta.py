"""The tokenized corpus's record (data/tokens/meta.json, which `gpt1 tokenize` writes): the training split's tokens,
which the stages that resolve pretrain.epochs into updates hand to the schedule (gpt1/params/schedule.py), and which
they declare as a dependency (data/tokens)."""

from __future__ import annotations

import json
from pathlib import Path

from gpt1.layout import TOKENS_META


def training_tokens(meta: Path = TOKENS_META) -> int | None:
    """The tokenized training split's tokens, or None before `gpt1 tokenize` has run."""
    if not Path(meta).is_file():
        return None
    return int(json.loads(Path(meta).read_text(encoding="utf-8"))["train"]["tokens"])
