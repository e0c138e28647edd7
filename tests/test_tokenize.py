"""Stage tokenize: corpus splits -> memory-mapped token arrays that decode back to the text."""

import json

import numpy as np

from gpt1.stages import bpe as bpe_stage
from gpt1.stages import tokenize as tokenize_stage
from gpt1.tokenizer import bpe as bpe_module
from gpt1.tokenizer import encode
from gpt1.data.text import clean


def _corpus(folder, documents):
    folder.mkdir(parents=True)
    for split, docs in (("train", documents[:-2]), ("val", documents[-2:])):
        lines = [json.dumps({"part": "test", "text": clean(d)}) for d in docs]
        (folder / f"{split}.jsonl").write_text("\n".join(lines) + "\n")


def test_token_arrays_round_trip(english_documents, tmp_path):
    _corpus(tmp_path / "corpus", english_documents)
    trained = bpe_stage.run(300, corpus=tmp_path / "corpus/train.jsonl", out=tmp_path / "bpe")
    meta = tokenize_stage.run(corpus=tmp_path / "corpus", bpe_folder=tmp_path / "bpe", out=tmp_path / "tokens")

    assert meta["dtype"] == "uint16" and meta["vocab_size"] == trained.vocab_size
    val = encode.load_tokens(tmp_path / "tokens", "val")
    assert isinstance(val, np.memmap) and val.dtype == np.uint16
    assert len(val) == meta["val"]["tokens"] == (tmp_path / "tokens/val.bin").stat().st_size // 2
    # The two validation documents, joined by GPT-1's line-break token, decode to their words.
    separator = trained.encoder["\n</w>"]
    first, second = trained.encode(english_documents[-2]), trained.encode(english_documents[-1])
    assert val.tolist() == first + [separator] + second
    assert int(val.max()) < trained.vocab_size


def test_dtype_widens_for_large_vocabularies():
    assert encode.token_dtype(65_536) == np.uint16
    assert encode.token_dtype(65_537) == np.uint32


def test_documents_stream_through_the_encoder(tmp_path, monkeypatch):
    """The paper profile's corpus is ~5 GB of text: a split must never be read into memory whole."""
    corpus = tmp_path / "train.jsonl"
    corpus.write_text("".join(json.dumps({"text": f"document {i}"}) + "\n" for i in range(50)))
    read = []

    def counting_reader(path):
        for text in bpe_module.read_corpus(path):
            read.append(text)
            yield text

    class ReportsHowFarTheReaderGot:
        encoder = {"\n</w>": 0}

        def encode_many(self, texts, already_clean):
            for text in texts:
                yield [len(read)]  # documents read when this one reached the encoder

    monkeypatch.setattr(encode, "read_corpus", counting_reader)
    stats = encode.encode_split(ReportsHowFarTheReaderGot(), corpus, tmp_path / "train.bin", np.dtype(np.uint16))
    written = np.fromfile(tmp_path / "train.bin", dtype=np.uint16).tolist()
    read_when_encoded = written[0::2]  # documents after the first are preceded by the separator 0
    assert stats["documents"] == 50 and stats["tokens"] == 99 and stats["characters"] == sum(map(len, read))
    assert read_when_encoded == list(range(1, 51))
