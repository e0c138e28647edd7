"""GPT-1's text clean-up and the sentence keys used for deduplication and decontamination."""

from __future__ import annotations

import hashlib
import re

import ftfy

# The released GPT-1 code's `text_standardize`, kept rule for rule so our BPE sees what GPT-1's saw. Its punctuation
# rule, `(-+|~+|!+|"+|;+|\?+|\++|,+|\)+|\(+|\\+|\/+|\*+|\[+|\]+|}+|{+|\|+|_+)`, matches a run of one character
# from its list; the backreference below matches the same runs without trying eighteen alternatives at every
# character (tests/test_cleanup.py holds the released pattern and compares).
_PUNCTUATION_RUNS = re.compile(r"""(([-~!";?+,)(\\/*\[\]}{|_])\2*)""")
_NEWLINES = re.compile(r"\s*\n\s*")
_SPACES = re.compile(r"[^\S\n]+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"[^\W_]+")


def text_standardize(text: str) -> str:
    text = text.replace("—", "-").replace("–", "-").replace("―", "-")
    text = text.replace("…", "...").replace("´", "'")
    text = _PUNCTUATION_RUNS.sub(r" \1 ", text)
    if "\n" in text:  # the rule needs one; most paragraphs have none
        text = _NEWLINES.sub(" \n ", text)
    text = _SPACES.sub(" ", text)
    return text.strip()


def repair(text: str) -> str:
    """`ftfy.fix_text(text)`, skipped where none of its steps can change the text: printable ASCII without "&".

    Each of ftfy's steps needs what such text lacks: a non-ASCII character (mojibake, C1 controls, ligatures, wide
    forms, curly quotes, surrogates, NFC), an ASCII control character (terminal escapes, control characters, "\\r"
    line breaks) or "&" (HTML entities). Most of a books corpus is such text; tests/test_cleanup.py checks the claim
    against ftfy itself."""
    if text.isascii() and text.isprintable() and "&" not in text:
        return text
    return ftfy.fix_text(text)


def clean(text: str) -> str:
    """ftfy's repairs (mojibake, odd quotes), then GPT-1's standardisation."""
    return text_standardize(repair(text))


def sentences(text: str) -> list[str]:
    """Split on sentence-final punctuation and line breaks; good enough to compare texts sentence by sentence."""
    return [piece for piece in _SENTENCE_END.split(text) if piece and not piece.isspace()]


def sentence_key(sentence: str) -> str | None:
    """A key equal for two sentences that differ only in case, punctuation or spacing.

    Sentences of fewer than `MIN_KEY_WORDS` words ("Yes.", "Thank you.") are too common to mean
    contamination, so they get no key.
    """
    words = _WORD.findall(sentence.lower())  # the text between runs of non-word characters
    if len(words) < MIN_KEY_WORDS:
        return None
    return hashlib.blake2b(" ".join(words).encode(), digest_size=12).hexdigest()


MIN_KEY_WORDS = 4
