"""GPT-1's BPE: exact merge count, deterministic training, ids equal to transformers' OpenAIGPTTokenizer."""

from collections import Counter

import pytest

from gpt1.tokenizer.bpe import SPECIAL_TOKENS, Gpt1Bpe, WordSplitter, count_words, train_merges
from gpt1.errors import UserError
from gpt1.data.cleanup import clean

MERGES = 600


@pytest.fixture(scope="module")
def split_corpus(english_documents):
    held_out = english_documents[-3:]
    train = [clean(document) for document in english_documents[:-3]]
    return train, held_out


@pytest.fixture(scope="module")
def trained(split_corpus, tmp_path_factory):
    train, _ = split_corpus
    base, merges = train_merges(count_words(train), MERGES)
    bpe = Gpt1Bpe.from_merges(base, merges)
    folder = tmp_path_factory.mktemp("bpe")
    bpe.save(folder)
    return bpe, folder


def test_exactly_the_requested_merges(trained):
    bpe, folder = trained
    assert len(bpe.merges) == MERGES
    lines = (folder / f"vocab_{MERGES}.bpe").read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("#version") and len(lines) == MERGES + 1


def test_vocabulary_layout_is_gpt1s(trained):
    """Base symbols (each character and its word-final form), then one token per merge, then specials."""
    bpe, _ = trained
    characters = [token for token in bpe.encoder if len(token) == 1]
    assert all(character + "</w>" in bpe.encoder for character in characters)
    assert len(bpe.encoder) == 2 * len(characters) + MERGES
    first_merge = "".join(bpe.merges[0])
    assert bpe.encoder[first_merge] == 2 * len(characters)
    assert [bpe.special_id(token) for token in SPECIAL_TOKENS] == [len(bpe.encoder) + i for i in range(3)]
    assert bpe.vocab_size == len(bpe.encoder) + 3


def test_training_is_deterministic(split_corpus, trained):
    """The trainer hashes with a fresh random seed per run; ties must still break the same way."""
    train, _ = split_corpus
    counts = count_words(train)
    for _ in range(3):
        again = Gpt1Bpe.from_merges(*train_merges(counts, MERGES))
        assert again.merges == trained[0].merges and again.encoder == trained[0].encoder


def test_too_many_merges_is_a_clear_error():
    with pytest.raises(UserError, match="supports only .* merges"):
        train_merges(Counter({"ab": 3, "cd": 1}), 50)


def test_ids_equal_openai_gpt_tokenizer(split_corpus, trained):
    """On held-out text our ids are those of transformers' OpenAIGPTTokenizer (spaCy + ftfy path)
    reading the two files we export in GPT-1's format."""
    transformers = pytest.importorskip("transformers")
    bpe, folder = trained
    reference = transformers.OpenAIGPTTokenizer(vocab_file=str(folder / f"encoder_bpe_{MERGES}.json"),
                                                merges_file=str(folder / f"vocab_{MERGES}.bpe"))
    assert reference.nlp is not None, "transformers fell back to BERT splitting: spaCy or ftfy missing"
    _, held_out = split_corpus
    known = {token for token in bpe.encoder if len(token) == 1}
    compared = 0
    for document in held_out:
        for paragraph in document.split("\n\n"):
            # Characters never seen in training have no id in either tokenizer; leave them out.
            text = "".join(c for c in paragraph.lower() if c in known or c.isspace()).strip()
            if not text:
                continue
            ours = bpe.encode(text)
            theirs = reference.convert_tokens_to_ids(reference.tokenize(text))
            assert ours == theirs, text
            compared += len(ours)
    assert compared > 2000


def test_encode_decode_round_trip(trained):
    bpe, _ = trained
    text = "The data set contains 150 samples, and each has four features."
    assert bpe.decode(bpe.encode(text)) == " ".join(WordSplitter().split(text))


def test_load_reads_the_exported_files(trained):
    bpe, folder = trained
    loaded = Gpt1Bpe.load(folder)
    assert loaded.encoder == bpe.encoder and loaded.merges == bpe.merges
    assert loaded.encode("samples of iris flowers") == bpe.encode("samples of iris flowers")


def test_load_names_the_missing_file(tmp_path):
    with pytest.raises(UserError, match="encoder_bpe_"):
        Gpt1Bpe.load(tmp_path)


def test_released_files_can_replace_training(trained, tmp_path):
    from gpt1.tokenizer.bpe import import_released

    bpe, folder = trained
    imported = import_released(folder, MERGES, out=tmp_path / "bpe")
    assert imported.encoder == bpe.encoder and (tmp_path / "bpe" / "tokenizer.json").exists()
    with pytest.raises(UserError, match=f"holds {MERGES} merges but bpe.merges is 40000"):
        import_released(folder, 40000, out=tmp_path / "other")


def test_splitting_text_imports_spacy_without_torch_and_leaves_torch_importable():
    """A job that only splits text does not pay torch's import through spaCy's thinc; the words are the same as
    with torch loaded first, and torch still imports afterwards."""
    import subprocess
    import sys

    script = ("import sys\n"
              "from gpt1.tokenizer.bpe import WordSplitter\n"
              "words = WordSplitter().split('Hello, world!\\nIt\\'s 3.5 m.p.h. today -- isn\\'t it?')\n"
              "print('torch' in sys.modules)\n"
              "import torch\n"
              "print(torch.ones(1).item(), words == WordSplitter().split("
              "'Hello, world!\\nIt\\'s 3.5 m.p.h. today -- isn\\'t it?'))\n"
              "print(words)\n")
    plain = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    first, second, words = plain.splitlines()
    assert first == "False" and second == "1.0 True"
    loaded_first = subprocess.run([sys.executable, "-c", "import torch\n" + script], capture_output=True, text=True,
                                  check=True).stdout.splitlines()
    assert loaded_first == ["True", "1.0 True", words]


def test_the_word_splitter_renews_its_vocabulary_and_splits_the_same(monkeypatch):
    """spaCy's vocabulary keeps every string it meets; past `renew_at` the splitter starts a fresh one, so its
    memory is bounded whatever the corpus's size, and the words do not change."""
    texts = [f"Paragraph {n}: the Zorblax{n} met qwerty{n * 7}, didn't they? 3.{n} m.p.h.\n" for n in range(300)]
    expected = list(WordSplitter().split_many(texts))
    monkeypatch.setattr(WordSplitter, "renew_at", 2000)
    splitter = WordSplitter()
    renewed, largest, words = 0, 0, []
    for start in range(0, len(texts), 20):
        before = splitter._spacy
        words += list(splitter.split_many(texts[start:start + 20]))
        renewed += splitter._spacy is not before
        largest = max(largest, len(splitter._spacy.vocab.strings))
    assert words == expected
    assert renewed >= 1 and largest < 2000 + 20 * 40  # at most one call's strings past the limit


def test_a_word_that_holds_a_space_is_refused_before_training():
    """The trainer receives each word in strings of repeats cut at spaces: a space inside a word would split it."""
    with pytest.raises(ValueError, match="a word holds a space"):
        train_merges(Counter({"ab": 3, "c d": 2}), 1)
