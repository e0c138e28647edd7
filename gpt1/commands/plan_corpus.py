"""The pretraining corpus's size for `gpt1 plan`: what `pretrain.epochs` is resolved against before a run.

Exact once `gpt1 tokenize` has run: data/tokens/meta.json counts the training split's tokens. Before, an estimate:
each selected part's bytes of training text (a registered part records them in gpt1/data/registry.py; a local folder
or a user's corpus is measured here from its files) over the bytes one BPE token covers, measured with the
vocabulary nearest bpe.merges (BYTES_PER_TOKEN). A part of unknown size is named, never guessed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from gpt1.data.registry import CORPORA
from gpt1.data.user_paths import corpus_files
from gpt1.layout import TOKENS_META

# Bytes of text a token covers, by BPE merges: `gpt1 bpe` then `gpt1 tokenize` on the embedded default's corpus
# (23.2 MB of modern English prose; one byte a character within 0.05 %), characters / tokens of its held-out
# validation documents, which the BPE was not trained on (docs/measurements/bpe-bytes-per-token.json).
BYTES_PER_TOKEN = {2_000: 581_415 / 183_167, 40_000: 581_415 / 122_879}


@dataclass(frozen=True)
class CorpusSize:
    tokens: int | None  # None: a part's size is unknown
    exact: bool
    source: str  # where the figure comes from, as the plan prints it
    bytes: int | None = None  # the training text's bytes (characters, once tokenized): what the data stages read


# A vocabulary is bpe.merges + the corpus's base symbols + 3 special tokens; a tokenized corpus whose vocabulary
# leaves no room for that, or more base symbols than any text here had, was tokenized for other params.
MOST_BASE_SYMBOLS = 20_000


def corpus_size(params, meta: Path = TOKENS_META) -> CorpusSize:
    if meta.is_file():
        tokenized = json.loads(meta.read_text(encoding="utf-8"))
        if 0 < tokenized["vocab_size"] - 3 - params.bpe.merges <= MOST_BASE_SYMBOLS:
            return CorpusSize(int(tokenized["train"]["tokens"]), True, f"exact: {meta}",
                              int(tokenized["train"].get("characters", 0)) or None)
    merges = min(BYTES_PER_TOKEN, key=lambda known: abs(known - params.bpe.merges))
    per_token = BYTES_PER_TOKEN[merges]
    known, unknown, parts = 0, [], []
    for name in params.data.corpus:
        size = part_bytes(name, params.data)
        if size is None:
            unknown.append(name)
        else:
            known += size
            parts.append(f"{name} {size / 1e6:,.1f} MB")
    how = (f"estimate: {', '.join(parts) or 'no part of known size'} at {per_token:.2f} bytes a token, measured "
           f"with {merges:,} merges")
    if unknown:
        return CorpusSize(None, False, f"{how}; unknown until prepared or set: {', '.join(unknown)}")
    return CorpusSize(round(known / per_token), False, how, known)


def part_bytes(name: str, data) -> int | None:
    """A corpus part's bytes of training text: the user's files or a local folder measured, else the registry's."""
    if name in data.user_corpus:
        files = corpus_files(data.user_corpus[name])
        return sum(path.stat().st_size for path in files) if files else None
    part = CORPORA.get(name)
    folder = data.local_paths.get(name) if part is not None else None
    if folder:
        files = [path for path in Path(folder).expanduser().rglob("*.txt") if path.is_file()]
        return sum(path.stat().st_size for path in files) if files else None
    return part.train_bytes if part is not None else None
