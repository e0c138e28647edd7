"""A user's own tasks and corpus parts (data.user_tasks, data.user_corpus): read from CSV, TSV and JSON-lines files
into the same prepared files as a registered task, decontaminated alike, and a bad file stops `gpt1 prepare`
with one line naming the file, the row and the fix, before anything is written.

The users' files are written from the embedded sources' fixture rows (tests/fixtures_packaged.py), loaded through
the registered tasks' own loaders: the same rows, in the layouts a user would bring."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from fixtures_packaged import write_packaged_raw
from gpt1.params.schema import parse_params
from gpt1.data.records import read_examples, texts_of
from gpt1.data.registry import TASKS
from gpt1.data.cleanup import sentence_key, sentences
from gpt1.errors import UserError
from gpt1.stages import prepare

ROOT = Path(__file__).resolve().parents[1]
LABELS = ["negative", "positive"]


@pytest.fixture
def files(tmp_path):
    """data/raw of the embedded fixture, and one user file per family written from its rows."""
    return write_files(tmp_path)


def write_files(tmp_path: Path) -> Path:
    """`tmp_path`/raw: the embedded fixture; `tmp_path`/mine: one user file per family and a corpus folder."""
    raw = tmp_path / "raw"
    write_packaged_raw(raw)
    user = tmp_path / "mine"
    user.mkdir(exist_ok=True)
    reviews = TASKS["rt_polarity"].load(raw)["train"]
    pd.DataFrame({"review": [row.text for row in reviews],
                  "stars": [LABELS[row.label] for row in reviews]}).to_csv(user / "reviews.csv", index=False)
    pairs = TASKS["snli_100k"].load(raw)
    names = TASKS["snli_100k"].spec.labels
    for split in ("train", "test"):
        pd.DataFrame([{"p": row.premise, "h": row.hypothesis, "y": names[row.label]} for row in pairs[split]]).to_json(
            user / f"nli_{split}.jsonl", orient="records", lines=True)
    scored = TASKS["sts_b"].load(raw)["train"]
    pd.DataFrame({"s1": [row.a for row in scored], "s2": [row.b for row in scored],
                  "rating": [row.label for row in scored]}).to_csv(user / "sts.tsv", sep="\t", index=False)
    quiz = TASKS["social_iqa"].load(raw)["train"]
    pd.DataFrame([{"question": row.context, "options": list(row.choices), "gold": row.choices[row.label]}
                  for row in quiz]).to_json(user / "quiz.jsonl", orient="records", lines=True)
    notes = user / "notes"
    (notes / "deeper").mkdir(parents=True, exist_ok=True)
    (notes / "diary.txt").write_text("My own notes about the weather in the town today.\n\n"
                                     + "\n\n".join(row.text for row in reviews) + "\n", encoding="utf-8")
    (notes / "deeper" / "more.jsonl").write_text("".join(json.dumps({"text": row.text}) + "\n" for row in reviews))
    (notes / "README.md").write_text("Not a corpus file: neither .txt nor .jsonl.")
    return tmp_path


def declared(root) -> dict:
    """params.yaml with one user task per family and a user corpus folder, all selected."""
    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    mine = root / "mine"
    raw["data"]["user_tasks"] = {
        "my_reviews": {"family": "classification", "train": str(mine / "reviews.csv"), "text": "review",
                       "label": "stars", "labels": LABELS, "description": "reviews"},
        "my_nli": {"family": "entailment", "train": str(mine / "nli_train.jsonl"), "test": str(mine / "nli_test.jsonl"),
                   "premise": "p", "hypothesis": "h", "label": "y", "labels": list(TASKS["snli_100k"].spec.labels)},
        "my_sts": {"family": "similarity", "train": str(mine / "sts.tsv"), "a": "s1", "b": "s2", "score": "rating"},
        "my_quiz": {"family": "multiple_choice", "train": str(mine / "quiz.jsonl"), "context": "question",
                    "choices": ["options"], "answer": "gold"},
    }
    raw["data"]["user_corpus"] = {"my_notes": str(mine / "notes")}
    raw["data"]["tasks"] = ["rt_polarity", "snli_100k", "social_iqa", "my_reviews", "my_nli", "my_sts", "my_quiz"]
    raw["data"]["corpus"] = ["lee_background", "my_notes", "task_train_text"]
    raw["data"]["task_dev_fraction"] = raw["data"]["task_test_fraction"] = 0.2
    return raw


def run(root, raw: dict) -> None:
    prepare.run(parse_params(raw), raw=root / "raw", tasks_out=root / "tasks", corpus_out=root / "corpus")


def test_each_family_is_prepared_from_the_users_files_as_a_registered_task(files):
    run(files, declared(files))
    expected = {"my_reviews": ("classification", LABELS, ["accuracy"]),
                "my_nli": ("entailment", list(TASKS["snli_100k"].spec.labels), ["accuracy"]),
                "my_sts": ("similarity", [], ["pearson", "spearman"]), "my_quiz": ("multiple_choice", [], ["accuracy"])}
    for task, (family, labels, metrics) in expected.items():
        spec = json.loads((files / "tasks" / task / "task.json").read_text())
        assert (spec["family"], spec["labels"], spec["metrics"]) == (family, labels, metrics), task
        for split in ("train", "dev", "test"):
            assert read_examples(files / "tasks" / task / f"{split}.jsonl", family), (task, split)
    ours = {row.text: row.label for split in ("train", "dev", "test")
            for row in read_examples(files / "tasks/my_reviews" / f"{split}.jsonl", "classification")}
    assert ours == {row.text: row.label for row in TASKS["rt_polarity"].load(files / "raw")["train"]}
    given_test = TASKS["snli_100k"].load(files / "raw")["test"]  # a declared test file is kept as it is
    assert read_examples(files / "tasks/my_nli/test.jsonl", "entailment") == given_test
    scored = {(row.a, row.b): row.label for split in ("train", "dev", "test")
              for row in read_examples(files / "tasks/my_sts" / f"{split}.jsonl", "similarity")}
    assert scored == {(row.a, row.b): row.label for row in TASKS["sts_b"].load(files / "raw")["train"]}
    quiz = read_examples(files / "tasks/my_quiz/train.jsonl", "multiple_choice")
    assert all(row.choices[row.label] == "Read it" for row in quiz)  # the answer's text found among the options


def test_the_users_corpus_is_cleaned_deduplicated_and_decontaminated(files):
    run(files, declared(files))
    stats = json.loads((files / "corpus" / "stats.json").read_text())
    assert stats["my_notes"]["documents"] > 0
    assert stats["my_notes"]["duplicate_paragraphs"] > 0  # the .jsonl repeats the diary's reviews
    assert stats["my_notes"]["decontaminated_sentences"] > 0  # the diary holds my_reviews' dev and test rows
    corpus = [json.loads(line) for name in ("train", "val")
              for line in (files / "corpus" / f"{name}.jsonl").read_text().splitlines()]
    text = " ".join(row["text"] for row in corpus if row["part"] == "my_notes")
    assert "weather in the town" in text and "Not a corpus file" not in text
    kept = {sentence_key(part) for row in corpus for part in sentences(row["text"])}
    for split in ("dev", "test"):
        for example in read_examples(files / "tasks/my_reviews" / f"{split}.jsonl", "classification"):
            assert not {sentence_key(part) for t in texts_of(example) for part in sentences(t)} & kept, example
    train = read_examples(files / "tasks/my_reviews/train.jsonl", "classification")
    assert any(sentence_key(sentences(row.text)[0]) in kept for row in train)  # training rows stay in


def _edit(path, old: str, new: str) -> None:
    path.write_text(path.read_text(encoding="utf-8").replace(old, new, 1), encoding="utf-8")


def _csv_header(root, header):
    _edit(root / "mine/reviews.csv", "review,stars", header)


def _one_class(root):
    path = root / "mine/reviews.csv"
    path.write_text(path.read_text().replace(",positive", ",negative"))


def _not_utf8(root):
    path = root / "mine/reviews.csv"
    path.write_bytes(path.read_bytes().replace(b"tedious", "tédious".encode("latin-1"), 1))


def _empty_dev(root, raw):
    (root / "mine/empty.csv").write_text("review,stars\n")
    raw["data"]["user_tasks"]["my_reviews"]["dev"] = str(root / "mine/empty.csv")


# case: (change to the files, change to params (or None), texts the message must hold)
BAD = {
    "missing file": (lambda root: (root / "mine/reviews.csv").unlink(), None,
                     ["reviews.csv: no such file (data.user_tasks.my_reviews.train)", "fix the path in params.yaml"]),
    "missing column": (lambda root: _csv_header(root, "text,stars"), None,
                       ["reviews.csv:2: no column 'review' (found: text, stars)", "fix data.user_tasks.my_reviews.text"]),
    "empty split": (lambda root: None, _empty_dev,
                    ["empty.csv: no rows (data.user_tasks.my_reviews.dev)", "set it to null to carve this split"]),
    "label not in the set": (lambda root: _edit(root / "mine/reviews.csv", ",positive", ",great"), None,
                             ["reviews.csv:3: label 'great' is not one of data.user_tasks.my_reviews.labels",
                              "add the label to labels"]),
    "one class only": (_one_class, None, ["reviews.csv: every training row has the label 'negative'",
                                          "at least two of"]),
    "unparsable score": (lambda root: _edit(root / "mine/sts.tsv", "\t0.0\n", "\thigh\n"), None,
                         ["sts.tsv:2: score 'high' is not a finite number", "write it as e.g. 3.5"]),
    "no single right answer": (lambda root: _edit(root / "mine/quiz.jsonl", '"gold":"Read it"', '"gold":"Drop it"'),
                               None, ["quiz.jsonl:1: no single right answer: 'Drop it' is neither one candidate's text "
                                      "nor an index 0..2", "fix the row"]),
    "answer matching two candidates": (lambda root: _edit(root / "mine/quiz.jsonl", '"Burn it"', '"Read it"'), None,
                                       ["quiz.jsonl:1: no single right answer: candidates [0, 1] all read 'Read it'"]),
    "duplicate header": (lambda root: _csv_header(root, "review,review"), None,
                         ["reviews.csv:1: column 'review' appears twice in the header; rename one"]),
    "not UTF-8": (_not_utf8, None, ["reviews.csv: not UTF-8 text", "save it as UTF-8"]),
    "short CSV row": (lambda root: _edit(root / "mine/reviews.csv", ",positive\n", "\n"), None,
                      ["reviews.csv:3: 1 fields where the header has 2", "unquoted comma"]),
    "corpus without text files": (lambda root: [path.unlink() for path in (root / "mine/notes").rglob("*.*")], None,
                                  ["notes: no .txt or .jsonl files (data.user_corpus.my_notes)"]),
    "corpus row without text": (lambda root: (root / "mine/notes/deeper/more.jsonl").write_text('{"body": "x"}\n'),
                                None, ['more.jsonl:1: no "text" field holding a string']),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_file_stops_prepare_with_one_line_and_writes_nothing(case, files):
    change_files, change_params, expected = BAD[case]
    raw = declared(files)
    change_files(files)
    if change_params:
        change_params(files, raw)
    with pytest.raises(UserError) as error:
        run(files, raw)
    message = str(error.value)
    assert "\n" not in message and str(files / "mine") in message, message  # names the file, with its folder
    for text in expected:
        assert text in message, (text, message)
    assert not (files / "tasks").exists() and not (files / "corpus").exists() and not list(files.glob(".*.tmp"))


# case: (key under data.user_tasks.my_reviews or data.*, value, texts the message must hold)
BAD_PARAMS = {
    "name of a registered task": ("user_tasks.rt_polarity", {}, ["'data.user_tasks.rt_polarity.[key]'",
                                                                 "'rt_polarity' is a registered task",
                                                                 "name yours otherwise (e.g. my_rt_polarity)"]),
    "name of a registered corpus part": ("user_corpus.task_train_text", "/tmp/notes", ["is a registered task"]),
    "path inside a pipeline folder": ("user_tasks.my_reviews.train", "data/tasks/reviews.csv",
                                      ["'data.user_tasks.my_reviews.train'", "inside data/,",
                                       "move it outside data/ and results/"]),
    "path inside a folder of data/ of the user's": ("user_tasks.my_reviews.train", "data/own/my_task.tsv",
                                                   ["params: bad value for 'data.user_tasks.my_reviews.train' "
                                                    "('data/own/my_task.tsv'): data/own/my_task.tsv is inside data/, "
                                                    "where the pipeline writes; move it outside data/ and results/"]),
    "dev file inside data/": ("user_tasks.my_reviews.dev", "./data/dev.csv", ["'data.user_tasks.my_reviews.dev'",
                                                                             "inside data/"]),
    "corpus inside a pipeline folder": ("user_corpus.my_notes", "results/notes", ["inside results/"]),
    "unquoted yes/no labels": ("user_tasks.my_reviews.labels", [True, False],
                               ["'data.user_tasks.my_reviews.labels'", "quote the labels"]),
    "unknown format": ("user_tasks.my_reviews.train", "/tmp/reviews.xlsx",
                       ["cannot tell its format", "set format: csv, tsv or jsonl"]),
    "one choice column in a CSV": ("user_tasks.my_quiz.train", "/tmp/quiz.csv",
                                   ["choices names one column, but /tmp/quiz.csv is not JSON lines"]),
    "misspelt key": ("user_tasks.my_reviews.txt", "review", ["unknown key 'data.user_tasks.my_reviews.txt'"]),
}


@pytest.mark.parametrize("case", list(BAD_PARAMS))
def test_a_bad_declaration_is_one_line_naming_the_key(case, tmp_path):
    key, value, expected = BAD_PARAMS[case]
    raw = declared(tmp_path)
    node = raw["data"]
    *parents, leaf = key.split(".")
    for part in parents:
        node = node[part]
    if key == "user_tasks.rt_polarity":
        value = copy.deepcopy(raw["data"]["user_tasks"]["my_reviews"])
    node[leaf] = value
    with pytest.raises(UserError) as error:
        parse_params(raw)
    assert "\n" not in str(error.value)
    for text in expected:
        assert text in str(error.value), (text, str(error.value))


def test_a_users_similarity_task_is_a_regression_left_out_of_figure_2(tmp_path):
    raw = declared(tmp_path)
    raw["analysis"]["layer_transfer_tasks"] = ["my_sts"]
    with pytest.raises(UserError, match="'my_sts' is a regression task"):
        parse_params(raw)
    raw["analysis"]["layer_transfer_tasks"] = ["my_reviews"]
    assert parse_params(raw).analysis.layer_transfer_tasks == ["my_reviews"]


def test_exact_duplicates_are_removed_before_the_splits_are_carved_and_counted(files, caplog):
    """A user's file that repeats texts (here 30 of the reviews, five of them with the other label): each text is
    kept once, so none lands in two splits; the task's stats count the rows removed, and the log says so."""
    reviews = pd.read_csv(files / "mine/reviews.csv")
    repeated = reviews.head(30).copy()
    repeated.loc[:4, "stars"] = ["positive" if stars == "negative" else "negative" for stars in repeated.stars[:5]]
    pd.concat([reviews, repeated]).to_csv(files / "mine/reviews.csv", index=False)
    with caplog.at_level("INFO", logger="gpt1.data.prepare"):
        run(files, declared(files))
    texts = [row.text for split in ("train", "dev", "test")
             for row in read_examples(files / "tasks/my_reviews" / f"{split}.jsonl", "classification")]
    assert len(texts) == len(set(texts)) == len(reviews.review.unique())
    stats = json.loads((files / "tasks/my_reviews/stats.json").read_text())
    assert stats["duplicates_removed"] == 30 and sum(stats["examples"].values()) == len(texts)
    assert "task my_reviews: " in caplog.text and "30 exact duplicate example(s) removed before the splits" in caplog.text
    assert json.loads((files / "tasks/rt_polarity/stats.json").read_text())["duplicates_removed"] == 0  # as published


def test_a_duplicate_of_an_evaluation_row_leaves_train_and_the_test_majority_rate_is_recorded():
    from gpt1.data.records import ClassificationExample
    from gpt1.data.tasks import drop_duplicates, majority_rate

    row = ClassificationExample
    found = {"train": [row("a", 0), row("b", 1), row("b", 0), row("c", 1)], "test": [row("c", 0), row("d", 0)]}
    kept, removed = drop_duplicates(found)
    assert kept == {"train": [row("a", 0), row("b", 1)], "test": [row("c", 0), row("d", 0)]} and removed == 2
    assert majority_rate([row("x", 0), row("y", 2), row("z", 2), row("w", 1)]) == 0.5


def test_every_prepared_task_records_its_test_majority_rate(files):
    run(files, declared(files))
    for task in ("rt_polarity", "my_reviews", "my_nli", "my_quiz"):
        stats = json.loads((files / "tasks" / task / "stats.json").read_text())
        labels = [row.label for row in read_examples(files / "tasks" / task / "test.jsonl",
                                                     json.loads((files / "tasks" / task / "task.json").read_text())[
                                                         "family"])]
        assert stats["test_majority_rate"] == max(map(labels.count, set(labels))) / len(labels), task
    assert json.loads((files / "tasks/my_sts/stats.json").read_text())["test_majority_rate"] is None  # a regression
