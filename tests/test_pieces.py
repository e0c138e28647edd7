"""The piece route (gpt1/tokenizer/pieces.py) gives the words and ids that spaCy on each whole text gives: counted
by bpe (`count_words`) and encoded by tokenize (`PieceEncoder`), on varied real and odd text."""

from collections import Counter

import numpy as np
import pytest

import fixtures_paper
from test_cleanup import ODD_TEXTS, random_texts
from gpt1.data.cleanup import clean
from gpt1.tokenizer.bpe import Gpt1Bpe, WordSplitter, count_words, train_merges
from gpt1.tokenizer.bpe import _words as bpe_words
from gpt1.tokenizer.encode import PieceEncoder

# Where spaCy's special cases match across a space, and pieces with them must not be split apart.
ACROSS_SPACES = ["( :1<&", "&' ''X", ":-) :) :( ;)", "o.O O.o", "a ... b . . . c", "''' '' '", "<3 </3 <33", "=) =D"]


def paper_fixture_texts() -> list[str]:
    """Every field of the paper tasks' fixture files (GLUE, SNLI, SciTail, RACE, Story Cloze rows)."""
    fields = []
    for value in vars(fixtures_paper).values():
        if isinstance(value, dict):
            for text in value.values():
                if isinstance(text, str):
                    fields += [field for line in text.splitlines() for field in line.split("\t") if field.strip()]
    return fields


@pytest.fixture(scope="module")
def texts(english_documents) -> list[str]:
    raw = ODD_TEXTS + ACROSS_SPACES + random_texts(3000, seed=11) + english_documents + paper_fixture_texts()
    return [clean(text) for text in raw]  # bpe and tokenize read prepare's clean text


@pytest.fixture(scope="module")
def splitter() -> WordSplitter:
    return WordSplitter()


def test_a_texts_words_are_its_pieces_words_joined(texts, splitter):
    pieces = [splitter.cutter.pieces(text) for text in texts]
    distinct = sorted({piece for text_pieces in pieces for piece in text_pieces})
    words_of = dict(zip(distinct, splitter.split_pieces(distinct)))
    whole = list(splitter.split_many(texts, already_clean=True))
    joined = [[word for piece in text_pieces for word in words_of[piece]] for text_pieces in pieces]
    differing = [text for text, a, b in zip(texts, whole, joined) if a != b]
    assert not differing and len(texts) > 3000 and len(paper_fixture_texts()) > 100


def test_words_are_stock_spacys_without_the_lexical_attributes_it_computes(texts, splitter):
    """The splitter's spaCy computes no lexical attributes (gpt1/tokenizer/bpe.py): its words are those of spaCy's
    English tokenizer as it comes, attributes and all."""
    from spacy.lang.en import English

    stock = English().tokenizer
    assert stock.vocab.lex_attr_getters and not splitter._current().vocab.lex_attr_getters
    assert [bpe_words(stock(text)) for text in texts] == list(splitter.split_many(texts, already_clean=True))


def test_counting_each_distinct_piece_once_gives_every_words_count(texts, splitter):
    per_occurrence = Counter(word for words in splitter.split_many(texts * 3, already_clean=True) for word in words)
    assert count_words(texts * 3, workers=1) == per_occurrence
    assert count_words(texts * 3, workers=2) == per_occurrence


def test_the_bounded_cache_encodes_as_the_whole_text_does(texts, splitter):
    counts = Counter(word for words in splitter.split_many(texts, already_clean=True) for word in words)
    bpe = Gpt1Bpe.from_merges(*train_merges(counts, 300))
    expected = list(bpe.encode_many(texts, already_clean=True))
    for limit in (50, 1 << 20):  # emptied many times, and never
        encoder = PieceEncoder(bpe, np.uint16, limit=limit)
        encoded = []
        for start in range(0, len(texts), 256):
            batch = texts[start:start + 256]
            encoded += encoder.encode(batch)
            # at most `limit` pieces, or (just emptied) the pieces of the one call that did not fit
            assert len(encoder.cache) <= max(limit, len({p for text in batch for p in splitter.cutter.pieces(text)}))
        assert [ids.tolist() for ids in encoded] == expected


def test_encode_task_streams_the_folder_that_encoding_each_text_whole_gives(tmp_path, english_documents, splitter,
                                                                             monkeypatch):
    """The encode-task stage's ids (pieces through the bounded cache, batches of examples, each row written as it
    comes) against `Gpt1Bpe.encode` on each raw text and the folder `TaskTokens.save` writes: the same bytes."""
    from gpt1.data.records import EntailmentExample, MultipleChoiceExample, TaskSpec, texts_of
    from gpt1.data.task_data import TaskData
    from gpt1.model import task_encoding
    from gpt1.model.task_tokens import TaskTokens, TokenizedSplit

    raw = ODD_TEXTS + ACROSS_SPACES + random_texts(400, seed=12) + english_documents[:40] + paper_fixture_texts()
    bpe = Gpt1Bpe.from_merges(*train_merges(count_words([clean(text) for text in raw], workers=1), 300))
    monkeypatch.setattr(task_encoding, "_BATCH", 7)  # many batches, and batches that end inside a split
    cases = {
        "pairs": (TaskSpec("pairs", "entailment", ("yes", "no"), ("accuracy",), "test"),
                  [EntailmentExample(a, b, i % 2) for i, (a, b) in enumerate(zip(raw[::2], raw[1::2]))]),
        "choices": (TaskSpec("choices", "multiple_choice", (), ("accuracy",), "test"),
                    [MultipleChoiceExample(raw[i], (raw[i + 1], raw[i + 2], ""), i % 3) for i in range(0, 300, 3)])}
    for task, (spec, examples) in cases.items():
        data = TaskData(spec, {"train": examples[:50], "dev": examples[50:61], "test": examples[61:]},
                        {"train": 50, "dev": 11, "test": len(examples) - 61})
        written = task_encoding.write_task(task, data, bpe, tmp_path / "streamed" / task)
        assert written == {split: len(rows) for split, rows in data.splits.items()}
        whole = {split: TokenizedSplit([[bpe.encode(text) for text in texts_of(example)] for example in rows],
                                       [example.label for example in rows]) for split, rows in data.splits.items()}
        TaskTokens(task, spec, whole, data.full_sizes, bpe.vocab_size, task_encoding.special_ids(bpe)).save(
            tmp_path / "whole" / task)
        streamed, expected = ({path.name: path.read_bytes() for path in (tmp_path / side / task).iterdir()}
                              for side in ("streamed", "whole"))
        assert streamed == expected and len(expected) == 4
        assert task_encoding.encode_task(task, data, bpe) == TaskTokens.load(tmp_path / "streamed" / task)
