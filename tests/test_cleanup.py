"""The clean-up's fast paths give what the released rules and ftfy give, on odd text and on random text."""

import hashlib
import random
import re

import ftfy

from gpt1.data import cleanup

# The released GPT-1 code's rules as it wrote them, and the keys by substitution: what the faster forms must equal.
RELEASED_PUNCTUATION = re.compile(r"""(-+|~+|!+|"+|;+|\?+|\++|,+|\)+|\(+|\\+|\/+|\*+|\[+|\]+|}+|{+|\|+|_+)""")
NON_WORD_RUNS = re.compile(r"[\W_]+")


def released_standardize(text: str) -> str:
    text = text.replace("—", "-").replace("–", "-").replace("―", "-")
    text = text.replace("…", "...").replace("´", "'")
    text = RELEASED_PUNCTUATION.sub(r" \1 ", text)
    text = re.sub(r"\s*\n\s*", " \n ", text)
    text = re.sub(r"[^\S\n]+", " ", text)
    return text.strip()


def key_by_substitution(sentence: str) -> str | None:
    words = NON_WORD_RUNS.sub(" ", sentence.lower()).split()
    if len(words) < cleanup.MIN_KEY_WORDS:
        return None
    return hashlib.blake2b(" ".join(words).encode(), digest_size=12).hexdigest()


ODD_TEXTS = [
    "Well -- he said ... \"no!!\" (twice) [sic] {x} a|b c_d e/f g\\h i*j k+l m;n o?p ~~ __init__",
    "mixed—dashes–and―bars… and ´accents´, \u201ccurly\u201d \u2018quotes\u2019",
    "  leading and trailing \t tabs \r\n windows\rline \n\n\n blank \x0b\x0c vertical  ",
    "entities: &amp; &lt;b&gt; &#x2019; &hellip; R&D <b>&amp;</b>",
    "mojibake: cafÃ© âœ” Ã¼ber; ligatures ﬁne ﬂow; wide ＬＯＵＤ　ＮＯＩＳＥＳ",
    "controls \x00\x01\x1b[31mred\x1b[0m \x7f del \u0085 nel \u2028 ls \u2029 ps",
    "URLs https://example.com/a_b-c?q=1&r=2#x and e-mail first.last@example.org",
    "emoji 😀👍🏽 flags 🇫🇷 zwj 👩‍💻 and numbers 3.14 1,000,000 10-20 $5 50% 3rd",
    "contractions don't can't I'm we'll y'all o'clock rock'n'roll Ma'am",
    "hyphens well-known state-of-the-art re-enter -leading trailing- --- ---- -",
    "Кириллица и ελληνικά, 中文文本，日本語の文章。 العربية עברית हिन्दी",
    "surrogate-free combining: e\u0301 n\u0303 A\u030a and NFC é ñ Å",
    "",
    "   ",
    "\n",
    "a\n\nb\n \n c",
]


def random_texts(count: int, seed: int) -> list[str]:
    """Random strings over an alphabet that reaches every rule: punctuation runs, every kind of whitespace, "&",
    ASCII controls, non-ASCII letters, mojibake pieces and entities."""
    pieces = list("abcXYZ019 .,;:!?'\"-~+()[]{}|\\/*_&<>#\t\n\r\x0b\x0c\x1b\x00\x7f") + [
        "é", "Ã©", "ï¬", "—", "–", "…", "´", "\u201c", "\u2019", "\u00a0", "\u2028", "&amp;", "&#39;", "&hellip;",
        "ﬁ", "Ｌ", "😀", "中", "  ", "--", "!!!", " \n ", "\r\n"]
    rng = random.Random(seed)
    return ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 60))) for _ in range(count)]


def test_the_standardisation_equals_the_released_rules():
    texts = ODD_TEXTS + random_texts(3000, seed=1)
    assert [t for t in texts if cleanup.text_standardize(t) != released_standardize(t)] == []


def test_repair_equals_ftfy():
    texts = ODD_TEXTS + random_texts(3000, seed=2)
    assert [t for t in texts if cleanup.repair(t) != ftfy.fix_text(t)] == []


def test_repair_skips_ftfy_only_where_ftfy_changes_nothing():
    """Printable ASCII without "&" is what repair leaves alone: ftfy must leave every such string alone too, and
    change some string of each kind repair does send to it (else the skip is narrower than it need be)."""
    rng = random.Random(3)
    safe = [chr(code) for code in range(0x20, 0x7F) if chr(code) != "&"]
    for _ in range(5000):
        text = "".join(rng.choice(safe) for _ in range(rng.randint(0, 80)))
        assert ftfy.fix_text(text) == text
    for sent in ("a &amp; b", "a\x1b[31mb", "a\x00b", "caf\u00c3\u00a9", "\u201cq\u201d"):
        assert ftfy.fix_text(sent) != sent


def test_sentence_keys_equal_those_of_splitting_on_non_word_runs():
    texts = ODD_TEXTS + random_texts(1000, seed=4) + [t.replace("!", " ") * 3 for t in random_texts(300, seed=5)]
    sentences = [s for text in texts for s in cleanup.sentences(text) + [text]]
    assert [s for s in sentences if cleanup.sentence_key(s) != key_by_substitution(s)] == []
    assert sum(key_by_substitution(s) is not None for s in sentences) > 100  # long enough sentences to get keys
