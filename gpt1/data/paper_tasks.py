"""The paper profile: the data GPT-1 was trained and evaluated on, fetched from its real homes.

Sources (URLs and their sha256 pins) are gpt1.data.paper_sources's.

Loaders read `data/raw/<source name>/...` exactly as the upstream archive lays it out and return the
labelled splits found there; `make_splits` then uses a dev split as the test split when the upstream
test split is unlabelled (GLUE) and carves a dev split from train. A malformed row stops the run with
`<file>:<line>: <what is wrong>`.
"""

from __future__ import annotations

import csv
import json
from functools import partial
from pathlib import Path
from typing import Iterator, Sequence

from gpt1.errors import UserError
from gpt1.data.records import (ClassificationExample, EntailmentExample, Example, MultipleChoiceExample,
                          SimilarityExample, TaskSpec)
from gpt1.data.tasks import TaskDefinition
from gpt1.data import upstream_rows as upstream
from gpt1.files.text_files import json_lines, open_text, read_text

Splits = dict[str, list[Example]]

# --- reading helpers -------------------------------------------------------------------------------

BINARY = ("0", "1")
NLI_LABELS = ("entailment", "neutral", "contradiction")
QNLI_LABELS = ("entailment", "not_entailment")
SCITAIL_LABELS = ("entails", "neutral")


def _read_sentences(path: Path, text: str, label: str, fixed: Sequence[str] = ()) -> list[Example]:
    return [ClassificationExample(text=upstream.text(path, line, row[text], text), label=upstream.label(path, line, row[label], BINARY))
            for line, row in upstream.columns(path, (text, label), fixed)]


def _read_pairs(path: Path, first: str, second: str, label: str, names: Sequence[str], record,
                fixed: Sequence[str] = ()) -> list[Example]:
    """Sentence pairs by column name; `record(first, second, label index)` builds the example."""
    return [record(upstream.text(path, line, row[first], first), upstream.text(path, line, row[second], second),
                   upstream.label(path, line, row[label], names))
            for line, row in upstream.columns(path, (first, second, label), fixed)]


def _read_stsb(path: Path) -> list[Example]:
    examples = []
    for line, row in upstream.columns(path, ("sentence1", "sentence2", "score"), score_last=True):
        try:
            score = float(row["score"])
        except ValueError:
            raise UserError(f"{path}:{line}: bad number {row['score']!r} for the similarity score "
                            "(expected 0 to 5)") from None
        if not 0.0 <= score <= 5.0:
            raise UserError(f"{path}:{line}: similarity score {score} is outside 0 to 5")
        examples.append(SimilarityExample(upstream.text(path, line, row["sentence1"], "sentence1"),
                                          upstream.text(path, line, row["sentence2"], "sentence2"), score))
    return examples


def _splits(raw_dir: Path, folder: str, read, files: dict[str, str]) -> Splits:
    """{split: read(raw_dir/folder/file)} for the labelled files of one source."""
    return {split: read(raw_dir / folder / name) for split, name in files.items()}


# --- GLUE's MRPC, SNLI -----------------------------------------------------------------------------

MRPC_COLUMNS = ("Quality", "#1 ID", "#2 ID", "#1 String", "#2 String")


def load_mrpc(raw_dir: Path) -> Splits:
    """GLUE's MRPC recipe: dev = the training pairs listed in mrpc_dev_ids.tsv, train = the rest.

    The test split is Microsoft's labelled test file (the same pairs as GLUE's unlabelled MRPC test set).
    """
    ids = raw_dir / "glue_mrpc_dev_ids" / "mrpc_dev_ids.tsv"
    dev_ids = {(row["#1 ID"], row["#2 ID"]) for _, row in upstream.columns(ids, ("#1 ID", "#2 ID"), fixed=("#1 ID", "#2 ID"))}
    splits: Splits = {"train": [], "dev": [], "test": []}
    for path, is_test in ((raw_dir / "glue_mrpc_train" / "msr_paraphrase_train.txt", False),
                          (raw_dir / "glue_mrpc_test" / "msr_paraphrase_test.txt", True)):
        for line, row in upstream.columns(path, MRPC_COLUMNS):
            example = SimilarityExample(upstream.text(path, line, row["#1 String"], "#1 String"),
                                        upstream.text(path, line, row["#2 String"], "#2 String"),
                                        upstream.label(path, line, row["Quality"], BINARY))
            in_dev = (row["#1 ID"], row["#2 ID"]) in dev_ids
            splits["test" if is_test else "dev" if in_dev else "train"].append(example)
    return splits


def _read_snli(path: Path) -> list[Example]:
    """SNLI 1.0 jsonl; pairs without a gold label ("-": no annotator majority) are dropped, as usual."""
    examples = []
    for line, row in json_lines(upstream.require(path), "not a JSON object ({reason})", "not a JSON object"):
        if row.get("gold_label") != "-":
            examples.append(EntailmentExample(upstream.text(path, line, row.get("sentence1"), "sentence1"),
                                              upstream.text(path, line, row.get("sentence2"), "sentence2"),
                                              upstream.label(path, line, str(row.get("gold_label")), NLI_LABELS)))
    return examples


# --- RACE, Story Cloze -----------------------------------------------------------------------------

RACE_LETTERS = ("A", "B", "C", "D")


def _read_race_passage(path: Path) -> list[Example]:
    """One passage per file: {"article", "questions": [...], "options": [[4 strings], ...], "answers": ["C", ...]}."""
    try:
        passage = json.loads(read_text(path))
    except json.JSONDecodeError as error:
        raise UserError(f"{path}:{error.lineno}: not valid JSON ({error.msg})") from None
    fields = ("article", "questions", "options", "answers")
    if not isinstance(passage, dict) or any(field not in passage for field in fields):
        raise UserError(f"{path}:1: a RACE passage needs the fields {', '.join(fields)}")
    questions, options, answers = passage["questions"], passage["options"], passage["answers"]
    if not len(questions) == len(options) == len(answers):
        raise UserError(f"{path}:1: {len(questions)} questions, {len(options)} option lists, {len(answers)} answers")
    article = upstream.text(path, 1, passage["article"], "article")
    examples = []
    for number, (question, choices, answer) in enumerate(zip(questions, options, answers), start=1):
        if not isinstance(choices, list) or len(choices) != 4 or not all(isinstance(c, str) for c in choices):
            raise UserError(f"{path}: question {number}: expected 4 answer options, got {choices!r}")
        if answer not in RACE_LETTERS:
            raise UserError(f"{path}: question {number}: unknown answer {answer!r} (expected {upstream.either(RACE_LETTERS)})")
        examples.append(MultipleChoiceExample(f"{article} {question}", tuple(choices), RACE_LETTERS.index(answer)))
    return examples


def load_race(raw_dir: Path, levels: tuple[str, ...] = ("middle", "high")) -> Splits:
    """Context = article + " " + question (a question with a "_" blank is kept as it is)."""
    splits: Splits = {}
    for split in ("train", "dev", "test"):
        folders = [raw_dir / "race" / "RACE" / split / level for level in levels]
        files = sorted(path for folder in folders if folder.is_dir() for path in folder.glob("*.txt"))
        if not files:
            raise UserError(f"no RACE passages in {' or '.join(map(str, folders))}; run `gpt1 download`")
        splits[split] = [example for path in files for example in _read_race_passage(path)]
    return splits


STORY_COLUMNS = ("InputSentence1", "InputSentence2", "InputSentence3", "InputSentence4",
                 "RandomFifthSentenceQuiz1", "RandomFifthSentenceQuiz2", "AnswerRightEnding")
STORY_FILES = {"train": "*cloze_test_val__spring2016*.csv", "test": "*cloze_test_test__spring2016*.csv"}


def _read_story_cloze(path: Path) -> list[Example]:
    """Comma-separated with a header; context = the four sentences, choices = the two endings."""
    examples = []
    with open_text(path, encoding="utf-8-sig", newline="") as handle:
        reader = csv.DictReader(handle)
        missing = [column for column in STORY_COLUMNS if column not in (reader.fieldnames or [])]
        if missing:
            raise UserError(f"{path}:1: the header lacks {', '.join(missing)}")
        for row in reader:
            line = reader.line_num
            texts = [upstream.text(path, line, row[column], column) for column in STORY_COLUMNS[:6]]
            label = upstream.label(path, line, (row["AnswerRightEnding"] or "").strip(), ("1", "2"))
            examples.append(MultipleChoiceExample(" ".join(texts[:4]), tuple(texts[4:]), label))
    return examples


def load_story_cloze(raw_dir: Path) -> Splits:
    """As in the released code: the labelled val set is the training data (a dev split is carved from it)."""
    folder = raw_dir / "story_cloze"
    found = {}
    for split, pattern in STORY_FILES.items():
        paths = sorted(folder.rglob(pattern))
        if len(paths) != 1:
            raise UserError(f"expected one file matching '{pattern}' in {folder}, found {len(paths)}; "
                            "set data.local_paths.story_cloze to the folder holding the spring 2016 CSVs")
        found[split] = _read_story_cloze(paths[0])
    return found


# --- books -----------------------------------------------------------------------------------------


def load_books(raw_dir: Path, source: str = "books") -> Iterator[str]:
    """Each .txt file under data/raw/<source> is one document (a book), in path order; empty files are skipped.
    `books`: the folder of data.local_paths.books; `books1`: the downloaded re-collection."""
    folder = Path(raw_dir) / source
    paths = sorted(folder.rglob("*.txt"))
    if not paths:
        how = "set data.local_paths.books and run" if source == "books" else "run"
        raise UserError(f"no .txt files in {folder}; {how} `gpt1 download`")
    for path in paths:
        text = read_text(path)
        if text.strip():
            yield text


def load_books1(raw_dir: Path) -> Iterator[str]:
    return load_books(raw_dir, "books1")


# --- tasks -----------------------------------------------------------------------------------------

TRAIN_DEV = {"train": "train.tsv", "dev": "dev.tsv"}
ALL_THREE = ("train", "dev", "test")


def _task(name: str, family, labels: tuple[str, ...], metrics: tuple[str, ...], sources: tuple[str, ...], load,
          stands_for: str, zero_shot: str | None = None, model_of: str | None = None) -> TaskDefinition:
    spec = TaskSpec(name=name, family=family, labels=labels, metrics=metrics, source=",".join(sources),
                    stands_for=stands_for, model_of=model_of)
    return TaskDefinition(spec=spec, sources=sources, load=load, zero_shot=zero_shot)


def _glue_task(name: str, family, labels, metrics, source: str, folder: str, read, stands_for: str,
               files: dict[str, str] = TRAIN_DEV, zero_shot: str | None = None,
               model_of: str | None = None) -> TaskDefinition:
    load = partial(_splits, folder=f"{source}/{folder}", read=read, files=files)
    return _task(name, family, labels, metrics, (source,), load, stands_for, zero_shot, model_of)


_mnli = partial(_read_pairs, first="sentence1", second="sentence2", label="gold_label", names=NLI_LABELS,
                record=EntailmentExample)
_TASK_LIST = [
    _glue_task("cola", "classification", ("unacceptable", "acceptable"), ("matthews",), "glue_cola", "CoLA",
               partial(_read_sentences, text="sentence", label="label",
                       fixed=("source", "label", "original label", "sentence")),
               "Corpus of Linguistic Acceptability", zero_shot="acceptability"),
    _glue_task("sst2", "classification", ("negative", "positive"), ("accuracy",), "glue_sst2", "SST-2",
               partial(_read_sentences, text="sentence", label="label"), "Stanford Sentiment Treebank, binary",
               zero_shot="sentiment"),
    _task("mrpc", "similarity", ("not_paraphrase", "paraphrase"), ("f1", "accuracy"),
          ("glue_mrpc_train", "glue_mrpc_test", "glue_mrpc_dev_ids"), load_mrpc,
          "Microsoft Research Paraphrase Corpus"),
    _glue_task("stsb", "similarity", (), ("pearson", "spearman"), "glue_stsb", "STS-B", _read_stsb,
               "Semantic Textual Similarity Benchmark"),
    _glue_task("qqp", "similarity", ("not_duplicate", "duplicate"), ("f1", "accuracy"), "glue_qqp", "QQP",
               partial(_read_pairs, first="question1", second="question2", label="is_duplicate", names=BINARY,
                       record=SimilarityExample),
               "Quora Question Pairs"),
    _glue_task("mnli", "entailment", NLI_LABELS, ("accuracy",), "glue_mnli", "MNLI", _mnli,
               "MultiNLI, matched (in-genre) evaluation", files={"train": "train.tsv", "dev": "dev_matched.tsv"}),
    # One MNLI model, scored on both sets (the paper's Table 2): mnli_mm trains nothing; its train and dev splits
    # are mnli's, carved alike, so its test set (the mismatched dev file) is all it adds.
    _glue_task("mnli_mm", "entailment", NLI_LABELS, ("accuracy",), "glue_mnli", "MNLI", _mnli,
               "MultiNLI, mismatched (cross-genre) evaluation",
               files={"train": "train.tsv", "dev": "dev_mismatched.tsv"}, model_of="mnli"),
    # premise = question, hypothesis = sentence: GLUE's column order (the paper does not say)
    _glue_task("qnli", "entailment", QNLI_LABELS, ("accuracy",), "glue_qnli", "QNLI",
               partial(_read_pairs, first="question", second="sentence", label="label", names=QNLI_LABELS,
                       record=EntailmentExample),
               "Question NLI (a SQuAD question vs. one sentence of its paragraph)"),
    _glue_task("rte", "entailment", QNLI_LABELS, ("accuracy",), "glue_rte", "RTE",
               partial(_read_pairs, first="sentence1", second="sentence2", label="label", names=QNLI_LABELS,
                       record=EntailmentExample),
               "Recognizing Textual Entailment"),
    _task("snli", "entailment", NLI_LABELS, ("accuracy",), ("snli",),
          partial(_splits, folder="snli/snli_1.0", read=_read_snli,
                  files={split: f"snli_1.0_{split}.jsonl" for split in ALL_THREE}),
          "Stanford Natural Language Inference"),
    _task("scitail", "entailment", SCITAIL_LABELS, ("accuracy",), ("scitail",),
          partial(_splits, folder="scitail/SciTailV1.1/tsv_format",
                  read=partial(_read_pairs, first="premise", second="hypothesis", label="label",
                               names=SCITAIL_LABELS, record=EntailmentExample,
                               fixed=("premise", "hypothesis", "label")),
                  files={split: f"scitail_1.0_{split}.tsv" for split in ALL_THREE}),
          "SciTail science-question entailment"),
    _task("race", "multiple_choice", RACE_LETTERS, ("accuracy",), ("race",), load_race,
          "RACE reading comprehension, middle + high school", zero_shot="choice"),
    _task("story_cloze", "multiple_choice", ("ending1", "ending2"), ("accuracy",), ("story_cloze",),
          load_story_cloze, "Story Cloze Test (ROCStories), spring 2016", zero_shot="choice"),
]
PAPER_TASKS: dict[str, TaskDefinition] = {task.spec.name: task for task in _TASK_LIST}
