"""GPT-1's BPE: ftfy + text standardisation + spaCy word splitting + lowercase, then BPE with `</w>`.

Training uses HF `tokenizers`; the result is cut to exactly `merges` merges and written three ways:
`tokenizer.json` (HF, with the special tokens), and GPT-1's own `encoder_bpe_<merges>.json` (token -> id)
and `vocab_<merges>.bpe` (one merge per line after a header), which transformers' OpenAIGPTTokenizer reads.
"""

from __future__ import annotations

import json
import logging
import sys
from collections import Counter
from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from gpt1.files.atomic import atomic_directory
from gpt1.errors import UserError
from gpt1.files.text_files import read_text
from gpt1.data.cleanup import clean
from gpt1.files.parallel import Workers
from gpt1.tokenizer.pieces import PieceCutter

log = logging.getLogger(__name__)

END_OF_WORD = "</w>"
# GPT-1's released fine-tuning code appends these after the BPE vocabulary, in this order.
SPECIAL_TOKENS = ("_start_", "_delimiter_", "_classify_")
_BATCH = 256
_PIECES_PER_TEXT = 2000
_REPEATS_PER_STRING = 1 << 14


def _spacy_tokenizer():
    """spaCy's English tokenizer, imported only when text is actually split, and without torch: spaCy imports thinc,
    which imports torch where it can (seconds, in every job and worker that splits text) and runs without it (its
    ImportError fallback), while the tokenizer is rule-based. A None entry in sys.modules makes `import torch` raise
    ImportError (Python's import system); it is removed again at once, so torch stays importable afterwards."""
    hidden = "torch" not in sys.modules
    if hidden:
        sys.modules["torch"] = None
    try:
        from spacy.lang.en import English
    finally:
        if hidden and "torch" in sys.modules and sys.modules["torch"] is None:
            del sys.modules["torch"]
    tokenizer = English().tokenizer
    # spaCy computes a string's lexical attributes (its shape, whether it looks like a number, a URL, a stop word)
    # for every string its vocabulary meets for the first time: over half of what splitting a new piece costs. Only
    # the tokens' text is read here, and the splitting rules do not read those attributes.
    tokenizer.vocab.lex_attr_getters = {}
    return tokenizer


class WordSplitter:
    """Text -> lowercased spaCy words, exactly as GPT-1 (and OpenAIGPTTokenizer with spaCy) split them.

    spaCy's vocabulary keeps every string it has met (a lexeme and a cache entry each), so a splitter that reads a
    books-sized corpus would hold all of its millions of distinct words, in every worker. The splitter is renewed
    once its vocabulary passes `renew_at` strings: words do not depend on what the vocabulary holds, so the output
    is the same, and memory is bounded by `renew_at` rather than by the corpus."""

    renew_at = 500_000

    def __init__(self) -> None:
        self._spacy = _spacy_tokenizer()

    def _current(self):
        if len(self._spacy.vocab.strings) > self.renew_at:
            self._spacy = _spacy_tokenizer()
        return self._spacy

    def split(self, text: str, already_clean: bool = False) -> list[str]:
        return _words(self._current()(text if already_clean else clean(text)))

    def split_many(self, texts: Iterable[str], already_clean: bool = False) -> Iterator[list[str]]:
        cleaned = texts if already_clean else (clean(text) for text in texts)
        for doc in self._current().pipe(cleaned, batch_size=_BATCH):
            yield _words(doc)

    @cached_property
    def cutter(self) -> PieceCutter:
        return PieceCutter(self._spacy)

    def split_pieces(self, pieces: Sequence[str]) -> list[list[str]]:
        """Each piece's words (`PieceCutter.pieces`), as its text's words hold them.

        spaCy spends more per call than per word on a short piece, so the pieces go to it as one text, a line break
        between each two (no special case reaches across a line break's token); its words come back cut at those
        line breaks. The pieces that are themselves a line break or empty (no words) are answered here."""
        words: list = [["\n"] if piece == "\n" else None if piece else [] for piece in pieces]
        batch = [i for i, known in enumerate(words) if known is None]
        for start in range(0, len(batch), _PIECES_PER_TEXT):
            indices = batch[start:start + _PIECES_PER_TEXT]
            current: list[str] = []
            runs = [current]
            for word in self.split(" \n ".join(pieces[i] for i in indices), already_clean=True):
                if word == "\n":
                    current = []
                    runs.append(current)
                else:
                    current.append(word)
            if len(runs) != len(indices):
                raise RuntimeError(f"{len(indices)} pieces split into {len(runs)} runs of words")
            for i, run in zip(indices, runs):
                words[i] = run
        return words


def _words(doc) -> list[str]:
    """spaCy tokens, lowercased; a whitespace token becomes GPT-1's line break ("\n") or is dropped.

    spaCy emits runs such as "\n " as tokens; GPT-1's BPE special-cased one of them and mangled the
    rest (the released code splits BPE output on spaces), so we keep only the line break itself.
    """
    words = []
    for token in doc:
        text = token.text
        if text.isspace():
            if "\n" in text:
                words.append("\n")
        else:
            words.append(text.lower())
    return words


def train_merges(word_counts: Counter, merges: int) -> tuple[list[str], list[tuple[str, str]]]:
    """Train BPE on word counts; return GPT-1's base symbols and exactly `merges` merges."""
    characters = sorted({char for word in word_counts for char in word})
    final_form = _word_final_forms(characters)
    # Ask for more than enough, then keep the first `merges`: BPE is greedy, so a prefix of the merge
    # list is exactly what a shorter training run would have produced.
    trainer = trainers.BpeTrainer(vocab_size=2 * len(characters) + merges + 1, min_frequency=1,
                                  show_progress=sys.stderr.isatty())
    tokenizer = Tokenizer(models.BPE())
    # Each word goes to the trainer as often as it occurs, in strings of repeats that its own pre-tokenizer cuts at
    # spaces (no word holds one): a Python string per occurrence would cost more than the training.
    if any(" " in word for word in word_counts):
        raise ValueError("a word holds a space; the trainer would count it as two")
    tokenizer.pre_tokenizer = pre_tokenizers.Split(" ", behavior="removed")
    forms = {word[:-1] + final_form[word[-1]]: count for word, count in word_counts.items()}
    strings = sum(-(-count // _REPEATS_PER_STRING) for count in forms.values())
    tokenizer.train_from_iterator(_repeats(forms), trainer=trainer, length=strings)
    learned = json.loads(tokenizer.to_str())["model"]["merges"]
    learned = [tuple(m.split(" ", 1)) if isinstance(m, str) else tuple(m) for m in learned]
    if len(learned) < merges:
        raise UserError(f"the corpus supports only {len(learned)} BPE merges but bpe.merges is {merges}; "
                        "lower bpe.merges or add text to the corpus")
    back = {form: char + END_OF_WORD for char, form in final_form.items()}
    restore = lambda token: token[:-1] + back[token[-1]] if token[-1] in back else token  # noqa: E731
    # GPT-1's base vocabulary: every character, then every character as a word end.
    base = characters + [char + END_OF_WORD for char in characters]
    return base, [(restore(a), restore(b)) for a, b in learned[:merges]]


def _word_final_forms(characters: list[str]) -> dict[str, str]:
    """A private-use stand-in for each character at the end of a word (GPT-1's "c</w>").

    The trainer's own `end_of_word_suffix` numbers the "c</w>" symbols in hash-map order, which breaks
    ties between equally frequent pairs differently from run to run. Single characters are numbered in
    code-point order, so spelling word ends as distinct characters makes training reproducible.
    """
    used = set(characters)
    free = (chr(point) for point in range(0xF0000, 0x10FFFE) if chr(point) not in used and (point & 0xFFFF) < 0xFFFE)
    return {char: next(free) for char in characters}


def _repeats(word_counts: dict[str, int]) -> Iterator[str]:
    """Each word `count` times, space-separated, in strings of at most `_REPEATS_PER_STRING` words."""
    for word, count in sorted(word_counts.items()):
        for start in range(0, count, _REPEATS_PER_STRING):
            yield (word + " ") * min(_REPEATS_PER_STRING, count - start)


@dataclass
class Gpt1Bpe:
    """The trained tokenizer: GPT-1's vocabulary (base symbols, merged tokens, then special tokens)."""

    encoder: dict[str, int]  # base symbols and merged tokens, as GPT-1's encoder_bpe_*.json
    merges: list[tuple[str, str]]

    @classmethod
    def from_merges(cls, base: Sequence[str], merges: Sequence[tuple[str, str]]) -> "Gpt1Bpe":
        encoder: dict[str, int] = {}
        for token in [*base, *(a + b for a, b in merges)]:
            encoder.setdefault(token, len(encoder))
        return cls(encoder=encoder, merges=list(merges))

    @property
    def vocab_size(self) -> int:
        """Vocabulary including the special tokens (the model's embedding rows)."""
        return len(self.encoder) + len(SPECIAL_TOKENS)

    def special_id(self, token: str) -> int:
        return len(self.encoder) + SPECIAL_TOKENS.index(token)

    @cached_property
    def hf(self) -> Tokenizer:
        vocab = {**self.encoder, **{t: len(self.encoder) + i for i, t in enumerate(SPECIAL_TOKENS)}}
        model = models.BPE(vocab=vocab, merges=self.merges, end_of_word_suffix=END_OF_WORD)
        tokenizer = Tokenizer(model)
        tokenizer.decoder = decoders.BPEDecoder(suffix=END_OF_WORD)
        return tokenizer

    @cached_property
    def splitter(self) -> WordSplitter:
        return WordSplitter()

    def encode_words(self, words: list[str]) -> list[int]:
        return self.hf.encode(words, is_pretokenized=True, add_special_tokens=False).ids if words else []

    def encode(self, text: str) -> list[int]:
        return self.encode_words(self.splitter.split(text))

    def encode_many(self, texts: Iterable[str], already_clean: bool = False) -> Iterator[list[int]]:
        for words in self.splitter.split_many(texts, already_clean=already_clean):
            yield self.encode_words(words)

    def decode(self, ids: Sequence[int]) -> str:
        return self.hf.decode(list(ids), skip_special_tokens=False)

    # --- files ----------------------------------------------------------------------------------------

    def document_start(self) -> tuple[int, ...]:
        """The token pretraining puts between documents, so that a text read after it starts a new document."""
        separator = self.encoder.get("\n" + END_OF_WORD)
        return () if separator is None else (separator,)

    def write_vocabulary(self, encoder_path: Path, merges_path: Path) -> None:
        """GPT-1's two files: token -> id as JSON, and the merges one pair per line after a version header
        (encoder_bpe_*.json and vocab_*.bpe; transformers reads the same pair as vocab.json and merges.txt)."""
        # encoding named: the locale's (latin-1 on some machines) cannot hold every token
        Path(encoder_path).write_text(json.dumps(self.encoder, ensure_ascii=False), encoding="utf-8")
        lines = ["#version: 0.2"] + [f"{a} {b}" for a, b in self.merges]
        Path(merges_path).write_text("\n".join(lines) + "\n", encoding="utf-8")

    def save(self, folder: Path) -> None:
        """Write tokenizer.json and GPT-1's two files into `folder` (replaced whole, atomically)."""
        merges = len(self.merges)
        with atomic_directory(folder) as staging:
            self.hf.save(str(staging / "tokenizer.json"))
            self.write_vocabulary(staging / f"encoder_bpe_{merges}.json", staging / f"vocab_{merges}.bpe")

    @classmethod
    def load(cls, folder: Path) -> "Gpt1Bpe":
        """Read GPT-1's file pair (ours or the released encoder_bpe_40000.json / vocab_40000.bpe)."""
        folder = Path(folder)
        encoders = sorted(folder.glob("encoder_bpe_*.json"))
        if len(encoders) != 1:
            raise UserError(f"{folder}: expected one encoder_bpe_<merges>.json, found {len(encoders)}; run `gpt1 bpe`")
        merges_file = folder / encoders[0].name.replace("encoder_bpe_", "vocab_").replace(".json", ".bpe")
        if not merges_file.exists():
            raise UserError(f"{folder}: {merges_file.name} is missing next to {encoders[0].name}; run `gpt1 bpe`")
        return cls(encoder=_read_encoder(encoders[0]), merges=_read_merges(merges_file))


def _read_encoder(path: Path) -> dict[str, int]:
    """encoder_bpe_<merges>.json: token -> id, ids 0 ... n-1."""
    try:
        encoder = json.loads(read_text(path))
    except json.JSONDecodeError as error:
        raise UserError(f"{path}: not valid JSON (line {error.lineno}: {error.msg}); re-create it with `gpt1 bpe` "
                        "or download the released file again") from None
    if not isinstance(encoder, dict) or sorted(v for v in encoder.values() if isinstance(v, int)) != list(range(len(encoder))):
        raise UserError(f"{path}: expected a JSON object of tokens to ids 0 ... n-1; re-create it with `gpt1 bpe`")
    return encoder


def _read_merges(path: Path) -> list[tuple[str, str]]:
    """vocab_<merges>.bpe: a header line, then one merge `a b` per line."""
    merges = []
    for number, line in enumerate(read_text(path).split("\n")[1:], start=2):
        if not line:
            continue
        pair = line.split(" ")
        if len(pair) != 2 or not all(pair):
            raise UserError(f"{path}:{number}: expected one merge, two symbols separated by a space, found {line!r}; "
                            "re-create it with `gpt1 bpe` or download the released file again")
        merges.append((pair[0], pair[1]))
    return merges


def count_words(texts: Iterable[str], workers: int | None = None) -> Counter:
    """How often each word occurs in already clean texts (prepare's corpus), on `workers` processes (default: every
    core this process may use; the counts do not depend on it).

    A corpus repeats its pieces (gpt1/tokenizer/pieces.py) millions of times: they are counted as strings, at C
    speed, and each distinct piece is split into words once, its count given to each of its words."""
    with Workers(workers) as pool:
        piece_counts: Counter = Counter()
        for chunk_counts in pool.map(_count_pieces, texts):
            piece_counts.update(chunk_counts)
        distinct = list(piece_counts)
        counts: Counter = Counter()
        pieces_words = (words for chunk in pool.map(_split_pieces, distinct) for words in chunk)
        for piece, words in zip(distinct, pieces_words):
            times = piece_counts[piece]
            for word in words:
                counts[word] += times
    return counts


@cache
def _worker_splitter() -> WordSplitter:
    return WordSplitter()


def _count_pieces(texts: list[str]) -> Counter:
    counts: Counter = Counter()
    cutter = _worker_splitter().cutter
    for text in texts:
        counts.update(cutter.pieces(text))
    return counts


def _split_pieces(pieces: list[str]) -> list[list[str]]:
    return _worker_splitter().split_pieces(pieces)


def read_corpus(path: Path) -> Iterator[str]:
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            yield json.loads(line)["text"]


def import_released(folder: Path, merges: int, out: Path) -> Gpt1Bpe:
    """Use released BPE files (e.g. GPT-1's encoder_bpe_40000.json + vocab_40000.bpe) instead of training."""
    bpe = Gpt1Bpe.load(Path(folder))
    if len(bpe.merges) != merges:
        raise UserError(f"{folder} holds {len(bpe.merges)} merges but bpe.merges is {merges}; make them agree")
    bpe.save(out)
    log.info("imported %d merges from %s; vocabulary %d", merges, folder, bpe.vocab_size)
    return bpe
