"""Stage prepare: fixed task splits, malformed rows, and decontamination of the pretraining corpus."""

import json

import pytest
import yaml

from fixtures_packaged import (BENCH, CLAIMS, GENSIM, QUESTIONS, REVIEWS, SNLI_PREMISES, STS, STS_PAIRS,
                               write_packaged_raw)
from gpt1.data import packaged
from gpt1.data.registry import TASKS
from gpt1.data.tasks import make_splits
from gpt1.stages import prepare
from gpt1.params.schema import parse_params
from gpt1.errors import UserError
from gpt1.data.records import read_examples, texts_of
from gpt1.data.cleanup import sentence_key, sentences

TASK_FAMILIES = {"rt_polarity": "classification", "snli_100k": "entailment", "vitaminc": "entailment",
                 "lee_similarity": "similarity", "sts_b": "similarity", "social_iqa": "multiple_choice"}


@pytest.fixture
def params(repo_root):
    raw = yaml.safe_load((repo_root / "params.yaml").read_text())
    raw["data"]["task_dev_fraction"] = raw["data"]["task_test_fraction"] = 0.2
    raw["data"]["tasks"] = list(TASK_FAMILIES)  # every embedded task, also those the default leaves out
    raw["data"]["corpus"] = ["shakespeare", "bbc_news", "wiki_paragraphs", "wiki_articles", "lee_background"]
    return parse_params(raw)


@pytest.fixture
def repo_root(request):
    return request.config.rootpath


def _run(params, tmp_path, corpus_extra=""):
    raw = tmp_path / "raw"
    write_packaged_raw(raw, corpus_extra)
    prepare.run(params, raw=raw, tasks_out=tmp_path / "tasks", corpus_out=tmp_path / "corpus")
    return tmp_path


def test_tasks_get_fixed_seeded_splits(params, tmp_path):
    first = _run(params, tmp_path / "a")
    second = _run(params, tmp_path / "b")
    for task, family in TASK_FAMILIES.items():
        for split in ("train", "dev", "test"):
            a = (first / "tasks" / task / f"{split}.jsonl").read_bytes()
            assert a == (second / "tasks" / task / f"{split}.jsonl").read_bytes()
            assert read_examples(first / "tasks" / task / f"{split}.jsonl", family), (task, split)
    rt = [e for split in ("train", "dev", "test") for e in read_examples(first / "tasks/rt_polarity" / f"{split}.jsonl", "classification")]
    assert len(rt) == len(REVIEWS)  # the zero-rated snippet is dropped
    assert {e.label for e in rt if "wonderful" in e.text} == {1}
    snli_test = read_examples(first / "tasks/snli_100k/test.jsonl", "entailment")
    assert [e.premise for e in snli_test] == [p for i, p in enumerate(SNLI_PREMISES[24:], 24) if i % 4 != 3]


def test_lee_pairs_split_at_random_into_disjoint_sets_with_their_ratings(tmp_path):
    write_packaged_raw(tmp_path)
    found = packaged.load_lee_similarity(tmp_path)
    assert set(found) == {"train"}  # the registry's carved_fractions split it, as any carved task
    definition = TASKS["lee_similarity"]
    splits = make_splits(found, "lee_similarity", 1234, 0.1, 0.1, definition.carved_fractions)
    sizes = {split: len(rows) for split, rows in splits.items()}
    assert sizes == {"test": 9, "dev": 4, "train": 32}  # 45 pairs of the fixture's 10 documents: 20 %, 10 %
    documents = (tmp_path / GENSIM / "lee.cor").read_text(encoding="latin-1").splitlines()
    matrix = [line.split("\t") for line in (tmp_path / GENSIM / "similarities0-1.txt").read_text().splitlines()]
    seen = set()
    for rows in splits.values():
        for example in rows:
            i, j = documents.index(example.a), documents.index(example.b)
            assert i < j and example.label == float(matrix[i][j])
            seen.add((i, j))
    assert len(seen) == 45  # every pair once, in exactly one split
    test_documents = {example.a for example in splits["test"]} | {example.b for example in splits["test"]}
    train_documents = {example.a for example in splits["train"]} | {example.b for example in splits["train"]}
    assert test_documents <= train_documents  # transductive, as the loader's docstring says
    assert make_splits(packaged.load_lee_similarity(tmp_path), "lee_similarity", 1234, 0.1, 0.1,
                       definition.carved_fractions) == splits  # seeded


def test_sts_benchmark_keeps_its_own_splits_scores_and_verbatim_quotes(tmp_path):
    write_packaged_raw(tmp_path)
    splits = packaged.load_sts_benchmark(tmp_path)
    assert {split: len(rows) for split, rows in splits.items()} == {"train": 18, "dev": 6, "test": 6}
    assert [(e.a, e.b, e.label) for e in splits["test"]] == [(a, b, float(score)) for a, b, score in STS_PAIRS[24:]]
    assert splits["train"][0].b == 'A person plays "guitar 0.'  # no quoting parser: the stray quote stays


@pytest.mark.parametrize("row, message", [
    ("main-captions\tMSRvid\t2012\t0001\t4.0\tonly one sentence\n", "expected 7 tab-separated fields"),
    ("main-captions\tMSRvid\t2012\t0001\thigh\ta\tb\n", "'high' is not a number"),
    ("main-captions\tMSRvid\t2012\t0001\t5.5\ta\tb\n", "similarity score 5.5 is outside 0 to 5"),
])
def test_a_malformed_sts_row_names_its_file_and_line(tmp_path, row, message):
    write_packaged_raw(tmp_path)
    path = tmp_path / STS / "sts-dev.csv"
    path.write_text(path.read_text() + row)
    with pytest.raises(UserError, match=f"sts-dev.csv:7: {message}"):
        packaged.load_sts_benchmark(tmp_path)


def test_decontamination_removes_every_dev_and_test_sentence(params, tmp_path):
    everything = " ".join(REVIEWS + SNLI_PREMISES + CLAIMS + QUESTIONS)
    out = _run(params, tmp_path, corpus_extra=everything)
    corpus_keys = set()
    for split in ("train", "val"):
        for line in (out / "corpus" / f"{split}.jsonl").read_text().splitlines():
            corpus_keys.update(map(sentence_key, sentences(json.loads(line)["text"])))
    evaluation, training = set(), set()
    for task, family in TASK_FAMILIES.items():
        for split, keys in (("dev", evaluation), ("test", evaluation), ("train", training)):
            for example in read_examples(out / "tasks" / task / f"{split}.jsonl", family):
                for text in texts_of(example):
                    keys.update(k for k in map(sentence_key, sentences(text)) if k)
    assert evaluation and not (evaluation & corpus_keys)
    # Only evaluation sentences go: training sentences planted in the corpus stay.
    assert (training - evaluation) & corpus_keys
    stats = json.loads((out / "corpus" / "stats.json").read_text())
    assert stats["total"]["decontaminated_sentences"] >= len(evaluation & set(map(sentence_key, sentences(everything))))


def test_corpus_is_cleaned_and_deduplicated(params, tmp_path):
    out = _run(params, tmp_path)
    documents = [json.loads(line) for split in ("train", "val")
                 for line in (out / "corpus" / f"{split}.jsonl").read_text().splitlines()]
    texts = " ".join(d["text"] for d in documents)
    assert "To be , or not to be , that is the question." in texts  # GPT-1's standardisation spaces commas
    assert "[[" not in texts and "{{" not in texts and "'''" not in texts  # wiki markup stripped
    assert "Ein deutscher Satz" not in texts  # only the English block (the real file: tests/test_pipeline.py)
    # The 1,000 identical English fixture documents collapse to one copy of each paragraph.
    assert texts.count("Paragraph 0 first sentence") == 1
    assert texts.count("A new paragraph starts here and repeats in every document.") == 1
    assert {d["part"] for d in documents} == set(params.data.corpus)


@pytest.mark.parametrize("path, content, message", [
    ("vader/hutto_ICWSM_2014/movieReviewSnippets_GroundTruth.txt", "1\t2.0\tfine\n2\tbad\n",
     r"movieReviewSnippets_GroundTruth.txt:2: expected 'id<TAB>score<TAB>text'"),
    ("vader/hutto_ICWSM_2014/movieReviewSnippets_GroundTruth.txt", "1\tgreat\tfine text\n",
     r"movieReviewSnippets_GroundTruth.txt:1: 'great' is not a number"),
    ("snli_subset/data/snli_1.0_test.jsonl",
     '{"sentence1": "a", "sentence2": "b", "gold_label": "neutral"}\n{"sentence1": "a", "sentence2": "b", "gold_label": "maybe"}\n',
     r"snli_1.0_test.jsonl:2: unknown label 'maybe'"),
    ("snli_subset/data/snli_1.0_test.jsonl", '{"sentence1": "a", "gold_label": "neutral"}\n',
     r"snli_1.0_test.jsonl:1: missing field 'sentence2'"),
    (f"{BENCH}/social_iqa/task.json",
     json.dumps({"examples": [{"input": "q", "target_scores": "{'a': 1, 'b': 1}"}]}),
     r"social_iqa/task.json: example 1: expected exactly one correct choice"),
    (f"{BENCH}/vitaminc_fact_verification/task.json",
     json.dumps({"examples": [{"input": "T: e\nClaim: c", "target_scores": "{'Maybe': 1}"}]}),
     r"vitaminc_fact_verification/task.json: example 1: unknown label 'Maybe'"),
    (f"{GENSIM}/similarities0-1.txt", "1\t0.5\n", r"similarities0-1.txt:1: expected 10 similarities"),
])
def test_malformed_rows_stop_with_file_and_row(params, tmp_path, path, content, message):
    raw = tmp_path / "raw"
    write_packaged_raw(raw)
    (raw / path).write_text(content)
    with pytest.raises(UserError, match=message):
        prepare.run(params, raw=raw, tasks_out=tmp_path / "tasks", corpus_out=tmp_path / "corpus")
    assert not (tmp_path / "tasks").exists()  # nothing half-written


def test_english_block_is_where_the_catalogue_says(tmp_path):
    write_packaged_raw(tmp_path)
    documents = list(packaged.read_wiki_paragraphs(tmp_path))
    assert len(documents) == 1000 and documents[0].count("\n\n") == 1


def test_task_train_text_puts_training_rows_in_the_corpus_and_never_dev_or_test(params, tmp_path):
    params = params.model_copy(update={"data": params.data.model_copy(
        update={"corpus": [*params.data.corpus, "task_train_text"]})})
    out = _run(params, tmp_path)
    corpus = [json.loads(line) for split in ("train", "val")
              for line in (out / "corpus" / f"{split}.jsonl").read_text().splitlines()]
    task_text = " ".join(d["text"] for d in corpus if d["part"] == "task_train_text")
    keys = set(map(sentence_key, sentences(task_text)))
    for task, family in TASK_FAMILIES.items():
        found = {split: {k for e in read_examples(out / "tasks" / task / f"{split}.jsonl", family)
                         for text in texts_of(e) for k in map(sentence_key, sentences(text)) if k}
                 for split in ("train", "dev", "test")}
        evaluation = found["dev"] | found["test"]
        assert not evaluation & keys, task  # no evaluation sentence, even one a training row repeats ...
        if found["train"] - evaluation:  # (lee_similarity's pairs share their documents across splits)
            assert (found["train"] - evaluation) & keys, task  # ... while the training rows' own texts are there
    assert "label" not in task_text and '"label"' not in task_text


def test_social_iqa_carves_its_own_larger_test_split(params, tmp_path):
    out = _run(params, tmp_path)
    sizes = {split: len(read_examples(out / "tasks/social_iqa" / f"{split}.jsonl", "multiple_choice"))
             for split in ("train", "dev", "test")}
    # Its own shares (51.2 % test, 10.24 % dev: 1,000 and 200 of the real 1,954 rows), not data.task_*_fraction.
    assert sizes == {"test": round(len(QUESTIONS) * 0.512), "dev": round(len(QUESTIONS) * 0.1024),
                     "train": len(QUESTIONS) - round(len(QUESTIONS) * 0.512) - round(len(QUESTIONS) * 0.1024)}


def test_cleaning_on_two_workers_writes_the_bytes_one_process_writes(params, tmp_path, monkeypatch):
    """ftfy's repairs run in worker processes and come back in order (gpt1/files/parallel.py): deduplication, the val draw
    and every split must not depend on how many there are. Chunks of 4 rows send every task and the larger corpus
    parts through the workers."""
    from gpt1.files import parallel
    from gpt1.data import prepare as library

    raw = tmp_path / "raw"
    write_packaged_raw(raw)
    real_chunks, real_pool, pools = parallel.chunks, parallel.ProcessPoolExecutor, []
    monkeypatch.setattr(parallel, "chunks", lambda texts, **options: real_chunks(texts, documents=4, **options))
    monkeypatch.setattr(parallel, "ProcessPoolExecutor", lambda *args, **options: pools.append(1) or real_pool(*args, **options))
    written = {}
    for count in (1, 2):
        out = tmp_path / f"workers{count}"
        with parallel.Workers(count) as workers:  # as the stage: one set for the tasks and every corpus part
            prepared = library.prepare_tasks(params.data, params.seed, raw, out / "tasks", workers)
            banned = library.evaluation_sentence_keys(prepared)
            library.prepare_corpus(params.data, params.seed, raw, out / "corpus", banned, prepared, workers)
        written[count] = {path.relative_to(out).as_posix(): path.read_bytes() for path in sorted(out.rglob("*"))
                          if path.is_file()}
    assert written[1] == written[2] and len(written[1]) > 10
    assert len(pools) == 1  # one core starts none; two start one set, shared by the tasks and the corpus


def _clean_documents_one_by_one(documents, banned, min_dedup_chars):
    """The definition clean_documents keeps: paragraph by paragraph, a Python set of what was seen, every sentence
    keyed."""
    import hashlib
    from gpt1.data.cleanup import clean
    from gpt1.data.prepare import _paragraphs

    seen, found = set(), []
    for document in documents:
        kept = []
        for paragraph in map(clean, _paragraphs(document)):
            if len(paragraph) >= min_dedup_chars:
                fingerprint = hashlib.blake2b(paragraph.lower().encode(), digest_size=16).digest()
                if fingerprint in seen:
                    continue
                seen.add(fingerprint)
            parts = [part for part in sentences(paragraph) if sentence_key(part) not in banned]
            paragraph = " ".join(parts)
            if paragraph:
                kept.append(paragraph)
        if kept:
            found.append(" \n ".join(kept))
    return found


def test_batched_dedupe_and_decontamination_keep_what_one_paragraph_at_a_time_keeps(monkeypatch):
    """The dedupe looks a chunk's paragraphs up together and only a paragraph holding a banned sentence is split
    again: the documents are those of the paragraph-by-paragraph definition, across chunks and the set's merges,
    for repeats within a chunk, repeats differing in case, short paragraphs (never deduplicated), and paragraphs that
    decontamination empties or shortens."""
    from collections import Counter
    from gpt1.data.fingerprints import FingerprintSet
    from gpt1.data.prepare import clean_documents
    from gpt1.files import parallel

    sentence = "The {} report on the harbour was read aloud at noon."
    banned_text = "This exact evaluation sentence must never reach the corpus."
    paragraphs = [sentence.format(word) for word in ("first", "second", "third", "fourth", "fifth")]
    documents = []
    for index in range(40):
        chosen = [paragraphs[(index + k) % 5] for k in range(index % 4)]
        chosen.append(f"Short {index % 3}.")  # under min_dedup_chars: kept however often it repeats
        if index % 5 == 0:
            chosen.append(banned_text)
        if index % 7 == 0:
            chosen.append(f"{paragraphs[index % 5].upper()} {banned_text} Unique tail number {index} stays here.")
        chosen += chosen[:1]  # a repeat within the document
        documents.append("\n\n".join(chosen))
    banned = {sentence_key(banned_text)}
    min_dedup_chars = 20
    real_chunks = parallel.chunks
    monkeypatch.setattr(parallel, "chunks", lambda texts, **options: real_chunks(texts, documents=3, **options))
    counts = Counter()
    with parallel.Workers(1) as workers:
        found = list(clean_documents(documents, banned, min_dedup_chars, FingerprintSet(buffer=4), counts, workers))
    assert found == _clean_documents_one_by_one(documents, banned, min_dedup_chars)
    assert counts["duplicate_paragraphs"] > 10 and counts["decontaminated_sentences"] >= 5
