"""Synthetic English-like prose of any size, to rehearse the pipeline on a corpus as large as the paper's.

    python tools/synthetic_corpus.py --size 1GB --seed 0 --out ~/gpt1-data/synthetic/books.jsonl
    python tools/synthetic_corpus.py --size 10MB --seed 0 --out /tmp/notes.txt --stats /tmp/notes-stats.json

BooksCorpus is 6.7 GB; the default's corpus is 23 MB. A rehearsal needs text whose *statistics* scale as real text's
do, not only its bytes: a fixed word list would understate a word counter's memory and a BPE trainer's work, since a
real corpus keeps meeting new words (Heaps' law: distinct words V(n) grow as n^beta, beta about 0.5-0.6).

How the text is made (every draw a numpy vector per block of paragraphs, so it streams at tens of MB/s on one core):
- Word ranks follow a two-regime Zipf law over an unbounded rank space (as measured on large English corpora:
  Ferrer i Cancho and Sole 2001): p(r) ~ 1/r for the `head_words` most frequent ranks, ~ r^(-1/beta) beyond. The
  steep tail makes the number of distinct words grow as n^beta without bound: with the defaults 110 thousand in
  10 MB, 440 thousand in 100 MB (measured), so about 1.8 million in 1 GB and 5.5 million in 6.7 GB. BooksCorpus
  reports 1.3 million distinct words in its 985 million: the defaults err towards more, the costlier side for a
  word counter; --heaps-beta and --head-words move them.
- A rank's word is a fixed, pronounceable string of syllables (onset + vowel, a final coda), a bijection of the rank:
  the same for every seed (one language, many books), distinct ranks are distinct words, and frequent words are
  short (the 12,408 one-syllable words hold the most frequent ranks, their length growing with the rank as in
  English: about 3 letters in the top 10, 5 by rank 1,000; then come 6.8 million two-syllable words, and so on).
- Sentences of 5-40 words (mean about 17), capitalised, with commas, full stops, some question and exclamation marks
  and quoted (dialogue) sentences; paragraphs of 1-10 sentences, separated by a blank line.
- Every paragraph is unique even after the pipeline's clean-up and lowercasing (its exact paragraph dedupe keeps them
  all): words 2-4 of a paragraph's first sentence spell its number, scrambled, in base 1024 over the 1024 most
  frequent words, so two paragraphs always differ in one of them.

The output is what `data.user_corpus` reads (docs/data.md): `.jsonl` gives one document (a "book" of
`--document-paragraphs` paragraphs) per line, `{"text": "..."}`, which the pipeline streams and splits into train and
validation by document: use it for large corpora. `.txt` gives one document, paragraphs separated by blank lines (the
pipeline reads a .txt file whole, as one document: fine for small files and for tools that read plain text).

The same seed and size give the same bytes, and a smaller file is a prefix of a larger one of the same seed (both end at
a paragraph). The file is written to a temporary name beside it, then renamed; `<out>.synthetic.json` beside it
records what was made (the summary below), so the tool can tell its own files, which it replaces, from anyone else's,
which it refuses to touch. Memory is bounded by the vocabulary (the distinct words seen, 8 bytes each), not the size.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from tqdm import tqdm

# --- words: a bijection between ranks and pronounceable strings --------------------------------------------------

# A syllable is an onset (a consonant cluster) and a nucleus (a vowel group); a word may start with a bare nucleus
# and ends with a coda. Consonants and vowels are disjoint and each set's strings distinct, so a word splits back into
# its syllables one way only: distinct digit strings are distinct words.
ONSETS = ("b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "y", "z", "ch", "sh",
          "th", "ph", "wh", "st", "tr", "br", "cr", "dr", "fr", "gr", "pr", "pl", "bl", "cl", "fl", "gl", "sl", "sp",
          "sk", "sm", "sn", "sw", "str", "thr", "sc")
NUCLEI = ("a", "e", "i", "o", "u", "ea", "ee", "ai", "ou", "oo", "ie", "oa")
CODAS = ("", "n", "r", "s", "t", "l", "m", "d", "nd", "st", "ng", "ck", "ll", "rd", "rt", "nt", "ss", "th", "sh", "ld",
         "rn", "x")
FIRST_SYLLABLES = [onset + nucleus for onset in ("",) + ONSETS for nucleus in NUCLEI]
SYLLABLES = [onset + nucleus for onset in ONSETS for nucleus in NUCLEI]


@functools.cache
def one_syllable_words() -> tuple[str, ...]:
    """Every one-syllable word, ordered so that a word's length grows with its rank as in English (Zipf's law of
    abbreviation: about 2.4 letters at rank 1, 4.4 at rank 100, 6.4 at rank 10,000, give or take a letter): each rank
    takes a word of a drawn length, or of the nearest length left."""
    rng = np.random.default_rng(20240601)  # fixed: the language is the same for every seed
    pools: dict[int, list[str]] = {}
    for candidate in (syllable + coda for syllable in FIRST_SYLLABLES for coda in CODAS):
        pools.setdefault(len(candidate), []).append(candidate)
    for pool in pools.values():
        rng.shuffle(pool)
    count = sum(map(len, pools.values()))
    wanted = np.rint(2.4 + np.log10(np.arange(1, count + 1)) + rng.normal(0, 1, count)).astype(int)
    words = []
    for length in wanted:
        nearest = min((abs(size - length), -size) for size, pool in pools.items() if pool)
        words.append(pools[-nearest[1]].pop())
    return tuple(words)


MAX_SYLLABLES = 7  # 7-syllable words reach rank 3.5e20, past the largest rank drawn (2^62)


class Pieces:
    """Strings in one byte array, to join any sequence of them (by id) in one vector operation."""

    def __init__(self, strings):
        encoded = [string.encode() for string in strings]
        self.bytes = np.frombuffer(b"".join(encoded), dtype=np.uint8)
        self.lengths = np.array([len(string) for string in encoded], dtype=np.int64)
        self.starts = np.cumsum(self.lengths) - self.lengths

    def join(self, ids: np.ndarray, table: np.ndarray | None = None,
             starts: np.ndarray | None = None, lengths: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The pieces `ids` (any shape) one after another, and where each begins in the result. `table`, `starts`
        and `lengths` stand in for this object's own where the caller's pieces live in a larger table."""
        table = self.bytes if table is None else table
        starts = self.starts[ids].ravel() if starts is None else starts.ravel()
        lengths = self.lengths[ids].ravel() if lengths is None else lengths.ravel()
        ends = np.cumsum(lengths)
        begins = ends - lengths
        return table[np.repeat(starts - begins, lengths) + np.arange(ends[-1] if len(ends) else 0)], begins


@functools.cache
def _word_pieces() -> tuple[Pieces, int, int, int, int, np.ndarray]:
    """The pieces words are made of (one-syllable words, first syllables, syllables, codas, nothing), where each
    kind begins among them, and the rank index at which each longer length's words begin."""
    short = one_syllable_words()
    pieces = Pieces(short + tuple(FIRST_SYLLABLES) + tuple(SYLLABLES) + CODAS + ("",))
    first = len(short)
    middle = first + len(FIRST_SYLLABLES)
    coda = middle + len(SYLLABLES)
    sizes = [len(FIRST_SYLLABLES) * len(SYLLABLES) ** (n - 1) * len(CODAS) for n in range(2, MAX_SYLLABLES + 1)]
    class_starts = np.minimum(np.cumsum([0] + sizes[:-1]), 2**63 - 1).astype(np.int64)
    return pieces, first, middle, coda, coda + len(CODAS), class_starts


def spell(ranks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The words of `ranks` (1 = the most frequent) as one byte array, with each word's start and length.

    The first 12,408 ranks are the one-syllable words; then come the two-syllable words (6.8 million), the
    three-syllable ones, and so on, each length's words numbered in mixed radix (first syllable, syllables, coda).
    Each digit is shifted by a key made of the less significant digits (invertible, so still a bijection), so that
    neighbouring ranks do not share their first syllables."""
    pieces, first, middle, coda, empty, class_starts = _word_pieces()
    ranks = np.asarray(ranks, dtype=np.int64)
    short = ranks <= first
    index = ranks[~short] - 1 - first
    syllables = 1 + np.searchsorted(class_starts, index, side="right")
    index = index - class_starts[syllables - 2]
    longest = int(syllables.max(initial=0))
    ids = np.full((len(ranks), longest + 1), empty, dtype=np.int64)  # [first syllable, syllables..., coda]
    ids[short, 0] = ranks[short] - 1
    digits = np.zeros((len(index), longest + 1), dtype=np.int64)
    rows = np.arange(len(index))
    digits[rows, syllables], index = index % len(CODAS), index // len(CODAS)
    for from_end in range(1, longest):  # the syllables after the first, least significant first
        has = syllables - from_end >= 1
        digits[rows[has], (syllables - from_end)[has]] = index[has] % len(SYLLABLES)
        index[has] //= len(SYLLABLES)
    digits[:, 0] = index
    key = syllables.copy()
    mixed = np.full_like(digits, empty)
    for from_end in range(longest + 1):  # least significant first, so neighbouring ranks differ throughout
        position = syllables - from_end
        here = np.flatnonzero(position >= 0)
        at = position[here]
        radix = np.where(from_end == 0, len(CODAS), np.where(at == 0, len(FIRST_SYLLABLES), len(SYLLABLES)))
        base = np.where(from_end == 0, coda, np.where(at == 0, first, middle))
        digit = digits[here, at]
        mixed[here, at] = base + (digit + key[here]) % radix
        key[here] = (key[here] * 1_000_003 + digit * 7_919 + 12_345) % 2_147_483_647
    ids[~short] = mixed
    text, begins = pieces.join(ids)
    word_starts = begins.reshape(ids.shape)[:, 0]
    return text, word_starts, np.diff(word_starts, append=len(text))


def word(rank: int) -> str:
    """The word of one rank (see `spell`)."""
    return spell(np.array([rank]))[0].tobytes().decode()


@functools.cache
def word_table(count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The words of ranks 1..count (`spell`): those nearly every token uses, spelled once per process."""
    return spell(np.arange(1, count + 1))


# --- the text's shape ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Shape:
    """The knobs of the text's statistics; the defaults are English-like (see the module's docstring)."""
    heaps_beta: float = 0.6           # distinct words grow as words^beta: the rank tail falls as r^(-1/beta)
    head_words: int = 10_000          # ranks up to here follow p(r) ~ 1/r (classic Zipf)
    paragraph_mean_extra: float = 2.5  # sentences per paragraph: 1 + Poisson(this), at most 10
    sentence_shape: float = 1.6       # words per sentence: 5 + Gamma(shape, scale), at most 40 (mean about 17)
    sentence_scale: float = 7.5
    comma_rate: float = 0.055         # a comma after a word inside a sentence
    question_rate: float = 0.07
    exclamation_rate: float = 0.02
    quote_rate: float = 0.12          # a sentence in double quotes (dialogue)
    document_paragraphs: int = 1000   # a .jsonl line ("book"): about 0.4 MB


MIN_WORDS, MAX_WORDS, MAX_SENTENCES = 5, 40, 10
CACHED_RANKS = 1 << 18   # spelled once; the rarer 1.5 % of tokens are spelled block by block
SLOT_BASE, SLOTS = 1024, 3  # a paragraph's number in 3 base-1024 digits: 2^30 paragraphs, about 360 GB
BLOCK_PARAGRAPHS = 4096
GUIDE = 1 << 16
PREFIXES = ("", '"')
# After a word: inside a sentence a space or a comma; at a sentence's end its mark, a closing quote if quoted, and a
# space, or a blank line when the paragraph ends (held back until the next paragraph: `Writer.separator` bytes).
SUFFIXES = (" ", ", ") + tuple(mark + quote + end for mark in ".?!" for quote in ("", '"') for end in (" ", "\n\n"))


class Vocabulary:
    """Draws word ranks and counts the distinct ones drawn: a bitmap for the cached ranks, a sorted array (merged in
    doubling batches, so memory is 8 bytes a distinct word) for the rarer ones."""

    def __init__(self, shape: Shape):
        head = np.arange(1, shape.head_words + 1, dtype=np.float64)
        tail_exponent = 1 / shape.heaps_beta
        # p(r) = A/r up to head_words, A head^(s-1) r^-s beyond: continuous at the joint, the tail's mass A/(s-1).
        weights = 1 / head
        tail_mass = 1 / (tail_exponent - 1)
        total = weights.sum() + tail_mass
        self.head_cdf = np.cumsum(weights) / total
        self.head_words = shape.head_words
        # A guide table (where each 1/GUIDE of the unit interval starts among the ranks) makes inverting the
        # cumulative distribution a look-up and a step or two, five times faster than a binary search.
        self.guide = np.searchsorted(self.head_cdf, np.arange(GUIDE) / GUIDE, side="right")
        self.bounds = np.append(self.head_cdf, np.inf)
        self.tail_index = tail_exponent - 1
        self.seen_cached = np.zeros(CACHED_RANKS + 1, dtype=bool)
        self.seen_rare = np.zeros(0, dtype=np.int64)
        self.pending_rare: list[np.ndarray] = []
        self.pending_count = 0

    def draw(self, rng: np.random.Generator, count: int) -> np.ndarray:
        uniform = rng.random(count)
        index = self.guide[(uniform * GUIDE).astype(np.int64)]  # then the first index whose bound passes `uniform`
        behind = np.flatnonzero(self.bounds[index] <= uniform)
        while len(behind):
            index[behind] += 1
            behind = behind[self.bounds[index[behind]] <= uniform[behind]]
        ranks = index + 1
        in_tail = ranks > self.head_words
        # The tail as a Pareto law over ranks: P(R > x) = (head / x)^(s-1), drawn by inversion.
        tail_share = (uniform[in_tail] - self.head_cdf[-1]) / (1 - self.head_cdf[-1])
        with np.errstate(divide="ignore", over="ignore"):
            tail = (self.head_words + 0.5) * (1 - tail_share) ** (-1 / self.tail_index)
        ranks[in_tail] = np.minimum(tail, 2.0 ** 62).astype(np.int64) + 1
        return ranks

    def count(self, ranks: np.ndarray) -> None:
        cached = ranks <= CACHED_RANKS
        self.seen_cached[ranks[cached]] = True
        rare = np.unique(ranks[~cached])
        self.pending_rare.append(rare)
        self.pending_count += len(rare)
        if self.pending_count > max(len(self.seen_rare), 1 << 20):
            self._merge()

    def _merge(self) -> None:
        self.seen_rare = np.unique(np.concatenate([self.seen_rare, *self.pending_rare]))
        self.pending_rare, self.pending_count = [], 0

    def distinct(self) -> int:
        self._merge()
        return int(self.seen_cached.sum()) + len(self.seen_rare)


@dataclass
class Block:
    """Paragraphs: their `text` (bytes), their words' `ranks`, and where each paragraph ends in the text, in the
    ranks and in the count of sentences (so that only what is written is counted)."""
    text: np.ndarray
    ranks: np.ndarray
    byte_ends: np.ndarray
    word_ends: np.ndarray
    sentence_ends: np.ndarray


class Writer:
    """The text, a block of paragraphs at a time: every random choice of a block is one vector draw."""

    def __init__(self, shape: Shape, seed: int, json_lines: bool):
        self.shape = shape
        self.rng = np.random.default_rng(seed)
        self.vocabulary = Vocabulary(shape)
        self.paragraphs_made = 0
        # A paragraph's number goes through a seeded bijection of [0, 2^30) (an odd multiplier, an offset), then each
        # base-1024 digit through a seeded permutation of the 1024 most frequent ranks.
        self.number_multiplier = int(self.rng.integers(0, SLOT_BASE ** SLOTS // 2)) * 2 + 1
        self.number_offset = int(self.rng.integers(0, SLOT_BASE ** SLOTS))
        self.slot_ranks = np.stack([self.rng.permutation(SLOT_BASE) + 1 for _ in range(SLOTS)])
        escape = (lambda piece: json.dumps(piece)[1:-1]) if json_lines else (lambda piece: piece)
        self.punctuation = Pieces([escape(piece) for piece in PREFIXES + SUFFIXES])
        self.separator = len(escape("\n\n"))
        self.cached = word_table(CACHED_RANKS)

    def block(self) -> Block:
        shape, rng = self.shape, self.rng
        sentences = 1 + np.minimum(rng.poisson(shape.paragraph_mean_extra, BLOCK_PARAGRAPHS), MAX_SENTENCES - 1)
        lengths = np.clip(np.rint(MIN_WORDS + rng.gamma(shape.sentence_shape, shape.sentence_scale, sentences.sum())),
                          MIN_WORDS, MAX_WORDS).astype(np.int64)
        sentence_ends = np.cumsum(lengths)
        sentence_starts = sentence_ends - lengths
        ranks = self.vocabulary.draw(rng, int(sentence_ends[-1]))
        full_stop_rate = 1 - shape.question_rate - shape.exclamation_rate
        mark = np.searchsorted(np.cumsum([full_stop_rate, shape.question_rate]), rng.random(len(lengths)),
                               side="right")  # 0, 1, 2: the index of ".?!" in SUFFIXES
        quoted = rng.random(len(lengths)) < shape.quote_rate
        comma = rng.random(len(ranks)) < shape.comma_rate

        paragraph_last_sentence = np.cumsum(sentences) - 1
        first_tokens = sentence_starts[paragraph_last_sentence - sentences + 1]
        ranks[first_tokens[:, None] + np.arange(1, SLOTS + 1)] = self._number_words(len(sentences))

        prefix = np.zeros(len(ranks), dtype=np.int64)
        prefix[sentence_starts[quoted]] = 1
        suffix = comma.astype(np.int64)
        paragraph_end = np.zeros(len(lengths), dtype=np.int64)
        paragraph_end[paragraph_last_sentence] = 1
        suffix[sentence_ends - 1] = 2 + (mark * 2 + quoted) * 2 + paragraph_end
        text, word_starts, token_ends = self._spell(ranks, prefix, len(PREFIXES) + suffix)
        text[word_starts[sentence_starts]] -= 32  # capitalise: every word is lowercase ASCII letters
        word_ends = sentence_ends[paragraph_last_sentence]
        return Block(text, ranks, token_ends[word_ends - 1], word_ends, np.cumsum(sentences))

    def _number_words(self, count: int) -> np.ndarray:
        """The ranks spelling paragraphs numbered from `paragraphs_made` on: distinct numbers, distinct words."""
        numbers = np.arange(self.paragraphs_made, self.paragraphs_made + count, dtype=np.int64)
        if numbers[-1] >= SLOT_BASE ** SLOTS:
            raise CorpusError(f"more than {SLOT_BASE ** SLOTS:,} paragraphs: ask for a smaller --size")
        self.paragraphs_made += count
        scrambled = (numbers * self.number_multiplier + self.number_offset) % SLOT_BASE ** SLOTS
        digits = (scrambled[:, None] // SLOT_BASE ** np.arange(SLOTS)) % SLOT_BASE
        return self.slot_ranks[np.arange(SLOTS), digits]

    def _spell(self, ranks: np.ndarray, prefix: np.ndarray, suffix: np.ndarray) -> tuple[np.ndarray, ...]:
        """Each token as prefix + word + suffix, joined from one table in one vector operation; and where each
        token's word starts and where the token ends in the text."""
        cached_bytes, cached_starts, cached_lengths = self.cached
        rare = ranks > CACHED_RANKS
        rare_ranks, rare_index = np.unique(ranks[rare], return_inverse=True)
        rare_bytes, rare_starts, rare_lengths = spell(rare_ranks)
        table = np.concatenate([self.punctuation.bytes, cached_bytes, rare_bytes])
        word_starts = np.empty(len(ranks), dtype=np.int64)
        word_lengths = np.empty(len(ranks), dtype=np.int64)
        common = ranks[~rare] - 1
        word_starts[~rare] = len(self.punctuation.bytes) + cached_starts[common]
        word_lengths[~rare] = cached_lengths[common]
        word_starts[rare] = len(self.punctuation.bytes) + len(cached_bytes) + rare_starts[rare_index]
        word_lengths[rare] = rare_lengths[rare_index]
        starts = np.stack([self.punctuation.starts[prefix], word_starts, self.punctuation.starts[suffix]], axis=1)
        lengths = np.stack([self.punctuation.lengths[prefix], word_lengths, self.punctuation.lengths[suffix]], axis=1)
        text, begins = self.punctuation.join(None, table, starts, lengths)
        return text, begins[1::3], np.cumsum(lengths.ravel())[2::3]


# --- the file ------------------------------------------------------------------------------------------------------

UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12, "KIB": 2**10, "MIB": 2**20,
         "GIB": 2**30, "TIB": 2**40}
HEADER, FOOTER = b'{"text": "', b'"}\n'


class CorpusError(Exception):
    """A user's mistake, said in one line."""


def parse_size(text: str) -> int:
    """'100MB' -> 10^8 bytes (KB, MB, GB, TB are powers of 1000; KiB, MiB, GiB, TiB of 1024; a bare number is bytes)."""
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    if not found or found.group(2).upper() not in UNITS:
        raise CorpusError(f"--size {text!r}: write a number and a unit, such as 10MB, 1GB or 6.7GB")
    return int(float(found.group(1)) * UNITS[found.group(2).upper()])


def record_path(out: Path) -> Path:
    """Where the summary of a written corpus lives: beside it, named so the pipeline's reader skips it."""
    return out.with_name(out.name + ".synthetic.json")


def check_replaceable(out: Path) -> None:
    """Stop unless `out` is absent or a file this tool wrote and nobody changed since (its record says its size and
    modification time)."""
    if out.is_dir():
        raise CorpusError(f"{out} is a folder; name a file such as {out / 'books.jsonl'}")
    if not out.exists():
        return
    try:
        written = json.loads(record_path(out).read_text())["file"]
        ours = os.stat(out)
        if (written["bytes"], written["mtime_ns"]) == (ours.st_size, ours.st_mtime_ns):
            return
    except (OSError, ValueError, KeyError, TypeError):
        pass
    raise CorpusError(f"{out} exists and was not written by this tool (or was changed since): refusing to replace it; "
                      "remove it yourself or choose another --out")


@dataclass
class Summary:
    bytes: int = 0
    words: int = 0
    distinct_words: int = 0
    sentences: int = 0
    paragraphs: int = 0
    documents: int = 0
    # [bytes, words, distinct words] at each doubling of the size from 1 MB, and at the end: Heaps' law measured.
    growth: list[list[int]] = field(default_factory=list)


def generate(out: Path, size: int, seed: int, shape: Shape = Shape(), progress: bool | None = None) -> dict:
    """Write `size` bytes or a little less (whole paragraphs) of synthetic prose to `out`, .jsonl or .txt; return
    and record the summary."""
    out = Path(out).expanduser()
    json_lines = out.suffix.lower() == ".jsonl"
    if not json_lines and out.suffix.lower() != ".txt":
        raise CorpusError(f"{out}: name a .jsonl file (one document per line, for large corpora) or a .txt file")
    check_replaceable(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(f".{out.name}.{os.getpid()}.partial")
    record = record_path(out)
    record_partial = record.with_name(f".{record.name}.{os.getpid()}.partial")
    writer = Writer(shape, seed, json_lines)
    try:
        with open(partial, "wb") as handle, tqdm(total=size, unit="B", unit_scale=True,
                                                  disable=None if progress is None else not progress) as bar:
            summary = _write(handle, writer, size, shape.document_paragraphs if json_lines else None, bar)
        if summary.paragraphs == 0:
            raise CorpusError(f"--size {size} bytes holds no paragraph; ask for at least 10KB")
        written = os.stat(partial)
        result = {"tool": "tools/synthetic_corpus.py", "seed": seed, "size_asked": size,
                  "format": "jsonl" if json_lines else "txt", "shape": asdict(shape), **asdict(summary),
                  "file": {"bytes": written.st_size, "mtime_ns": written.st_mtime_ns}}
        record_partial.write_text(json.dumps(result, indent=2) + "\n")
        os.replace(partial, out)
        os.replace(record_partial, record)
    finally:
        partial.unlink(missing_ok=True)
        record_partial.unlink(missing_ok=True)
    return result


def _write(handle, writer: Writer, size: int, document_paragraphs: int | None, bar) -> Summary:
    """Blocks of paragraphs into `handle` until the next paragraph would pass `size` bytes. A paragraph's trailing
    blank line is held back: the next paragraph of its document needs it; a document's end replaces it."""
    summary, held, next_mark = Summary(), b"", 10**6
    header, ending = (HEADER, FOOTER) if document_paragraphs else (b"", b"\n")
    while True:
        block = writer.block()
        numbers = np.arange(summary.paragraphs, summary.paragraphs + len(block.byte_ends))
        starts_document = numbers % (document_paragraphs or 2**62) == 0
        # The file's size were it to end after each paragraph: what is written, the paragraphs and their documents'
        # headers, less the last paragraph's blank line, plus the ending.
        costs = np.diff(block.byte_ends, prepend=0) + len(header) * starts_document
        ending_sizes = summary.bytes + np.cumsum(costs) - writer.separator + len(ending)
        fits = int(np.searchsorted(ending_sizes, size, side="right"))
        cuts = sorted({0, fits, *np.flatnonzero(starts_document[:fits]).tolist()})
        for first, last in zip(cuts, cuts[1:]):
            if starts_document[first]:
                if summary.documents:
                    handle.write(ending)
                handle.write(header)
                held = b""
                summary.documents += 1
            chunk = block.text[block.byte_ends[first - 1] if first else 0:block.byte_ends[last - 1]]
            handle.write(held)
            handle.write(chunk[:-writer.separator].tobytes())
            held = chunk[-writer.separator:].tobytes()
        summary.bytes = handle.tell() + len(held)
        if fits:
            summary.paragraphs += fits
            summary.sentences += int(block.sentence_ends[fits - 1])
            summary.words += int(block.word_ends[fits - 1])
            writer.vocabulary.count(block.ranks[:block.word_ends[fits - 1]])
        bar.update(summary.bytes - bar.n)
        done = fits < len(block.byte_ends)
        if summary.bytes >= next_mark or done:
            summary.distinct_words = writer.vocabulary.distinct()
            summary.growth.append([summary.bytes, summary.words, summary.distinct_words])
            next_mark = max(next_mark, summary.bytes) * 2
        if done:
            break
    if summary.paragraphs:
        handle.write(ending)
        summary.bytes = handle.tell()
        summary.growth[-1][0] = summary.bytes
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", required=True, help="how much text: 10MB, 1GB, 6.7GB (KB/MB/GB: powers of 1000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True, type=Path, help="a .jsonl (one document per line) or .txt file")
    parser.add_argument("--stats", type=Path, help="also write the summary here, as JSON")
    parser.add_argument("--heaps-beta", type=float, default=Shape.heaps_beta,
                        help="distinct words grow as words^beta (default %(default)s)")
    parser.add_argument("--head-words", type=int, default=Shape.head_words,
                        help="ranks following Zipf's 1/r before the steeper tail (default %(default)s)")
    parser.add_argument("--document-paragraphs", type=int, default=Shape.document_paragraphs,
                        help="paragraphs per .jsonl line (default %(default)s, about 0.4 MB)")
    args = parser.parse_args(argv)
    try:
        if not 0.2 <= args.heaps_beta < 1 or args.head_words < 1 or args.document_paragraphs < 1:
            raise CorpusError("--heaps-beta must lie in [0.2, 1); --head-words and --document-paragraphs must be >= 1")
        shape = Shape(heaps_beta=args.heaps_beta, head_words=args.head_words,
                      document_paragraphs=args.document_paragraphs)
        result = generate(args.out, parse_size(args.size), args.seed, shape, progress=None)
    except CorpusError as error:
        print(f"synthetic_corpus: {error}", file=sys.stderr)
        return 2
    if args.stats:
        args.stats.parent.mkdir(parents=True, exist_ok=True)
        args.stats.write_text(json.dumps(result, indent=2) + "\n")
    print(f"{args.out}: {result['bytes']:,} bytes, {result['words']:,} words, {result['distinct_words']:,} distinct "
          f"words, {result['sentences']:,} sentences, {result['paragraphs']:,} paragraphs, "
          f"{result['documents']:,} documents")
    return 0


if __name__ == "__main__":
    sys.exit(main())
