"""tools/synthetic_corpus.py: reproducible, English-shaped synthetic prose that the own-corpus route reads, whose
vocabulary keeps growing with its size and whose every paragraph survives the pipeline's dedupe."""

import hashlib
import importlib.util
import json
import re
import sys
from collections import Counter

import numpy as np
import pytest

from gpt1.data.cleanup import clean
from gpt1.data.user_tasks import read_documents
from tiny import ROOT

spec = importlib.util.spec_from_file_location("synthetic_corpus", ROOT / "tools" / "synthetic_corpus.py")
synthetic = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = synthetic  # its dataclasses look their module up
spec.loader.exec_module(synthetic)

WORD = re.compile(r"[A-Za-z]+")


def make(tmp_path, name="corpus.txt", size="300KB", seed=0, **options):
    out = tmp_path / name
    assert synthetic.main(["--size", size, "--seed", str(seed), "--out", str(out),
                           *[f"--{key.replace('_', '-')}={value}" for key, value in options.items()]]) == 0
    return out


def paragraphs(text: str) -> list[str]:
    return [block for block in text.split("\n\n") if block.strip()]


def test_the_same_seed_and_size_give_the_same_bytes_and_a_smaller_file_is_a_prefix(tmp_path):
    first = make(tmp_path, "a.txt").read_bytes()
    again = make(tmp_path, "b.txt").read_bytes()
    smaller = make(tmp_path, "c.txt", size="100KB").read_bytes()
    assert first == again
    assert 290_000 < len(first) <= 300_000 and len(smaller) <= 100_000
    assert first.startswith(smaller[:-1])  # the smaller ends its last paragraph with "\n", the larger with "\n\n"


def test_other_seeds_give_other_text(tmp_path):
    texts = [make(tmp_path, f"{seed}.txt", size="50KB", seed=seed).read_text() for seed in (0, 1)]
    first_paragraphs = [set(paragraphs(text)) for text in texts]
    assert not first_paragraphs[0] & first_paragraphs[1]


def test_distinct_words_grow_sublinearly_but_keep_growing(tmp_path):
    small = json.loads((make(tmp_path, "1.txt", size="1MB").with_name("1.txt.synthetic.json")).read_text())
    large = json.loads((make(tmp_path, "4.txt", size="4MB").with_name("4.txt.synthetic.json")).read_text())
    ratio = large["distinct_words"] / small["distinct_words"]
    assert 1.5 < ratio < 3, ratio
    # Heaps' exponent from the two sizes, near the one asked for (0.6)
    beta = np.log(ratio) / np.log(large["words"] / small["words"])
    assert 0.5 < beta < 0.7, beta
    # the summary counts what the file holds
    words = Counter(word.lower() for word in WORD.findall((tmp_path / "1.txt").read_text()))
    assert (sum(words.values()), len(words)) == (small["words"], small["distinct_words"])


def test_word_frequencies_are_zipfian_and_frequent_words_short(tmp_path):
    words = Counter(word.lower() for word in WORD.findall(make(tmp_path, size="1MB").read_text()))
    ranked = [count for _, count in words.most_common()]
    # p(r) ~ 1/r in the head: rank 10 about a tenth as frequent as rank 1, rank 100 a hundredth
    assert 5 < ranked[0] / ranked[9] < 20 and 50 < ranked[0] / ranked[99] < 200
    top = [word for word, _ in words.most_common(100)]
    rare = [word for word, count in words.items() if count == 1]
    assert np.mean([len(word) for word in top]) + 2 < np.mean([len(word) for word in rare])
    assert len(rare) > len(words) / 3  # hapaxes: about half of a real text's vocabulary


def test_spelling_is_a_bijection_of_pronounceable_words():
    ranks = np.concatenate([np.arange(1, 50_000), np.random.default_rng(0).integers(50_000, 2**62, 50_000)])
    text, starts, lengths = synthetic.spell(ranks)
    words = [text[start:start + length].tobytes().decode() for start, length in zip(starts, lengths)]
    assert len(set(words)) == len(set(ranks.tolist()))
    assert all(re.fullmatch(r"[a-z]+", word) and re.search("[aeiou]", word) for word in words)
    assert not any(re.search("[^aeiou]{4}", word) for word in words)  # no unpronounceable consonant runs
    assert [synthetic.word(int(ranks[i])) for i in (0, 6, 60_000)] == [words[i] for i in (0, 6, 60_000)]


def test_sentences_and_paragraphs_have_natural_lengths(tmp_path):
    text = make(tmp_path, size="1MB").read_text()
    blocks = paragraphs(text)
    sentences = [sentence for block in blocks for sentence in re.split(r'(?<=[.?!]) |(?<=[.?!]") ', block)]
    lengths = np.array([len(sentence.split()) for sentence in sentences])
    assert 15 <= lengths.mean() <= 19 and lengths.min() == 5 and lengths.max() <= 40
    per_paragraph = np.array([len(re.findall(r'[.?!]"?(?: |$)', block)) for block in blocks])
    assert per_paragraph.min() == 1 and per_paragraph.max() <= 10 and 2.5 < per_paragraph.mean() < 5
    assert all(sentence.lstrip('"')[0].isupper() for sentence in sentences)
    marks = Counter(re.findall(r'[,.?!"]', text))
    assert marks["."] > marks["?"] > marks["!"] > 0 and marks[","] > marks["?"] and marks['"'] % 2 == 0
    assert 0.05 < marks['"'] / 2 / len(sentences) < 0.2  # some dialogue


def test_every_paragraph_survives_the_pipelines_dedupe(tmp_path):
    # The smallest paragraphs are the likeliest to repeat: here every one is a single five-word sentence.
    shape = synthetic.Shape(paragraph_mean_extra=0, sentence_scale=0.01, document_paragraphs=500)
    out = tmp_path / "corpus.jsonl"
    summary = synthetic.generate(out, 1_000_000, seed=0, shape=shape)
    cleaned = [clean(block).lower() for document in read_documents("synthetic", str(out))
               for block in paragraphs(document)]
    assert len(cleaned) == summary["paragraphs"] > 20_000
    assert {len(WORD.findall(paragraph)) for paragraph in cleaned} == {5}
    # the pipeline's key (gpt1/data/prepare.py: blake2b of the cleaned, lowercased paragraph) never repeats
    assert len({hashlib.blake2b(p.encode(), digest_size=16).digest() for p in cleaned}) == len(cleaned)
    # while the words that do not spell the paragraph's number repeat: chance alone would not keep them unique
    free_words = Counter(tuple(WORD.findall(paragraph)[i] for i in (0, 4)) for paragraph in cleaned)
    assert free_words.most_common(1)[0][1] > 10


def test_paragraph_numbers_spell_distinct_words_even_past_a_block():
    writer = synthetic.Writer(synthetic.Shape(), seed=3, json_lines=False)
    first = writer._number_words(synthetic.BLOCK_PARAGRAPHS)
    later = writer._number_words(synthetic.BLOCK_PARAGRAPHS)
    both = np.concatenate([first, later])
    assert len({tuple(row) for row in both.tolist()}) == len(both)
    assert both.min() >= 1 and both.max() <= synthetic.SLOT_BASE  # the most frequent words, not new ones


def test_the_own_corpus_reader_takes_both_formats(tmp_path):
    lines = make(tmp_path, "books.jsonl", size="400KB", document_paragraphs=100)
    record = json.loads(lines.with_name("books.jsonl.synthetic.json").read_text())
    documents = list(read_documents("synthetic", str(tmp_path)))  # the folder: the .jsonl; the record is not read
    assert len(documents) == record["documents"] == -(-record["paragraphs"] // 100) > 1
    assert lines.stat().st_size == record["bytes"] <= 400_000
    assert sum(len(paragraphs(document)) for document in documents) == record["paragraphs"]
    assert all(not document.startswith("\n") and not document.endswith("\n") for document in documents)
    plain = make(tmp_path / "plain", size="100KB")
    assert list(read_documents("synthetic", str(plain))) == [plain.read_text()]
    assert plain.read_text().endswith(".\n") or plain.read_text().endswith('"\n')


def test_it_replaces_its_own_file_but_refuses_anyone_elses(tmp_path, capsys):
    out = make(tmp_path, size="50KB")
    make(tmp_path, size="60KB")  # its own: replaced
    assert 50_000 < out.stat().st_size <= 60_000
    foreign = tmp_path / "notes.txt"
    foreign.write_text("my own notes\n")
    assert synthetic.main(["--size", "50KB", "--out", str(foreign)]) == 2
    assert foreign.read_text() == "my own notes\n"
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "not written by this tool" in error and "Traceback" not in error
    out.write_text(out.read_text() + "an edit\n")  # its own, then changed by hand: no longer its to replace
    assert synthetic.main(["--size", "50KB", "--out", str(out)]) == 2
    assert out.read_text().endswith("an edit\n")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["corpus.txt", "corpus.txt.synthetic.json",
                                                                "notes.txt"]  # no partial file left


def test_the_summary_is_printed_and_written_as_json(tmp_path, capsys):
    out = tmp_path / "c.txt"
    assert synthetic.main(["--size", "3MB", "--out", str(out), "--stats", str(tmp_path / "s" / "stats.json")]) == 0
    stats = json.loads((tmp_path / "s" / "stats.json").read_text())
    assert stats["bytes"] == out.stat().st_size and stats["seed"] == 0
    assert [row[0] for row in stats["growth"]][-1] == stats["bytes"] and len(stats["growth"]) >= 2
    growth = np.array(stats["growth"])
    assert (np.diff(growth, axis=0) > 0).all()  # bytes, words and distinct words all grow
    printed = capsys.readouterr().out
    assert f"{stats['distinct_words']:,} distinct words" in printed and f"{stats['paragraphs']:,} paragraphs" in printed


@pytest.mark.parametrize("size", ["ten", "5XB", "-1MB"])
def test_a_bad_size_is_one_line(tmp_path, capsys, size):
    assert synthetic.main([f"--size={size}", "--out", str(tmp_path / "c.txt")]) == 2
    assert "--size" in capsys.readouterr().err and not (tmp_path / "c.txt").exists()


def test_sizes_read_as_the_units_say():
    assert [synthetic.parse_size(text) for text in ("10MB", "1GB", "6.7GB", "2MiB", "512")] == [
        10**7, 10**9, 6_700_000_000, 2 * 2**20, 512]
