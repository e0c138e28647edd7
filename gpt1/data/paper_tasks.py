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

from gpt1.data import row_checks
from gpt1.data.nli import BINARY_NLI_LABELS, NLI_LABELS, read_snli
from gpt1.data.records import (ClassificationExample, EntailmentExample, Example, MultipleChoiceExample,
                               SimilarityExample, TaskSpec)
from gpt1.data.tasks import TaskDefinition, TaskSize
from gpt1.data.upstream_rows import columns
from gpt1.errors import UserError
from gpt1.files.text_files import open_text, read_text

Splits = dict[str, list[Example]]

# --- reading helpers -------------------------------------------------------------------------------

BINARY = ("0", "1")
SCITAIL_LABELS = ("entails", "neutral")


def _read_sentences(path: Path, text: str, label: str, fixed: Sequence[str] = ()) -> list[Example]:
    return [ClassificationExample(text=row_checks.text(where, row[text], text),
                                  label=row_checks.label(where, row[label], BINARY))
            for where, row in columns(path, (text, label), fixed)]


def _read_pairs(path: Path, first: str, second: str, label: str, names: Sequence[str], record,
                fixed: Sequence[str] = ()) -> list[Example]:
    """Sentence pairs by column name; `record(first, second, label index)` builds the example."""
    return [record(row_checks.text(where, row[first], first), row_checks.text(where, row[second], second),
                   row_checks.label(where, row[label], names))
            for where, row in columns(path, (first, second, label), fixed)]


def _read_stsb(path: Path) -> list[Example]:
    examples = []
    for where, row in columns(path, ("sentence1", "sentence2", "score"), score_last=True):
        score = row_checks.number(where, row["score"], "bad number {value} for the similarity score (expected 0 to 5)")
        examples.append(SimilarityExample(row_checks.text(where, row["sentence1"], "sentence1"),
                                          row_checks.text(where, row["sentence2"], "sentence2"),
                                          row_checks.within(where, score, 0.0, 5.0, "similarity score")))
    return examples


def _splits(raw_dir: Path, folder: str, read, files: dict[str, str]) -> Splits:
    """{split: read(raw_dir/folder/file)} for the labelled files of one source."""
    return {split: read(raw_dir / folder / name) for split, name in files.items()}


# --- GLUE's MRPC -----------------------------------------------------------------------------------

MRPC_COLUMNS = ("Quality", "#1 ID", "#2 ID", "#1 String", "#2 String")


def load_mrpc(raw_dir: Path) -> Splits:
    """GLUE's MRPC recipe: dev = the training pairs listed in mrpc_dev_ids.tsv, train = the rest.

    The test split is Microsoft's labelled test file (the same pairs as GLUE's unlabelled MRPC test set).
    """
    ids = raw_dir / "glue_mrpc_dev_ids" / "mrpc_dev_ids.tsv"
    dev_ids = {(row["#1 ID"], row["#2 ID"]) for _, row in columns(ids, ("#1 ID", "#2 ID"), fixed=("#1 ID", "#2 ID"))}
    splits: Splits = {"train": [], "dev": [], "test": []}
    for path, is_test in ((raw_dir / "glue_mrpc_train" / "msr_paraphrase_train.txt", False),
                          (raw_dir / "glue_mrpc_test" / "msr_paraphrase_test.txt", True)):
        for where, row in columns(path, MRPC_COLUMNS):
            example = SimilarityExample(row_checks.text(where, row["#1 String"], "#1 String"),
                                        row_checks.text(where, row["#2 String"], "#2 String"),
                                        row_checks.label(where, row["Quality"], BINARY))
            in_dev = (row["#1 ID"], row["#2 ID"]) in dev_ids
            splits["test" if is_test else "dev" if in_dev else "train"].append(example)
    return splits



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
    article = row_checks.text(f"{path}:1", passage["article"], "article")
    examples = []
    for number, (question, choices, answer) in enumerate(zip(questions, options, answers), start=1):
        where = f"{path}: question {number}"
        if not isinstance(choices, list) or len(choices) != 4 or not all(isinstance(c, str) for c in choices):
            raise row_checks.row_error(where, f"expected 4 answer options, got {choices!r}")
        gold = row_checks.label(where, answer, RACE_LETTERS, "unknown answer {value} (expected {expected})")
        examples.append(MultipleChoiceExample(f"{article} {question}", tuple(choices), gold))
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
            where = f"{path}:{reader.line_num}"
            texts = [row_checks.text(where, row[column], column) for column in STORY_COLUMNS[:6]]
            label = row_checks.label(where, (row["AnswerRightEnding"] or "").strip(), ("1", "2"))
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
          stands_for: str, zero_shot: str | None = None, model_of: str | None = None,
          size: TaskSize | None = None) -> TaskDefinition:
    spec = TaskSpec(name=name, family=family, labels=labels, metrics=metrics, source=",".join(sources),
                    stands_for=stands_for, model_of=model_of)
    return TaskDefinition(spec=spec, sources=sources, load=load, zero_shot=zero_shot, size=size)


def _glue_task(name: str, family, labels, metrics, source: str, folder: str, read, stands_for: str,
               files: dict[str, str] = TRAIN_DEV, zero_shot: str | None = None,
               model_of: str | None = None, size: TaskSize | None = None) -> TaskDefinition:
    load = partial(_splits, folder=f"{source}/{folder}", read=read, files=files)
    return _task(name, family, labels, metrics, (source,), load, stands_for, zero_shot, model_of, size)


_mnli = partial(_read_pairs, first="sentence1", second="sentence2", label="gold_label", names=NLI_LABELS,
                record=EntailmentExample)
# Sizes (TaskSize): the rows of each upstream training file. GLUE's test labels are private: its dev file becomes
# the test split and a dev split is carved from train; sources with labelled dev and test files keep all of train.
# Mean text tokens: SNLI's from its published mean word counts (premise 14.1, hypothesis 8.3; Bowman et al. 2015),
# RACE's likewise (passage 321.9, question 10.0, option 5.3; Lai et al. 2017), the rest rough typical lengths.
_TASK_LIST = [
    _glue_task("cola", "classification", ("unacceptable", "acceptable"), ("matthews",), "glue_cola", "CoLA",
               partial(_read_sentences, text="sentence", label="label",
                       fixed=("source", "label", "original label", "sentence")),
               "Corpus of Linguistic Acceptability", zero_shot="acceptability",
               size=TaskSize(8_551, ("dev",), (11,))),  # GLUE CoLA train.tsv
    _glue_task("sst2", "classification", ("negative", "positive"), ("accuracy",), "glue_sst2", "SST-2",
               partial(_read_sentences, text="sentence", label="label"), "Stanford Sentiment Treebank, binary",
               zero_shot="sentiment", size=TaskSize(67_349, ("dev",), (13,))),  # GLUE SST-2 train.tsv
    _task("mrpc", "similarity", ("not_paraphrase", "paraphrase"), ("f1", "accuracy"),
          ("glue_mrpc_train", "glue_mrpc_test", "glue_mrpc_dev_ids"), load_mrpc,
          "Microsoft Research Paraphrase Corpus",
          size=TaskSize(3_668, (), (28, 28))),  # Microsoft's 4,076 training pairs less GLUE's 408 dev ids
    _glue_task("stsb", "similarity", (), ("pearson", "spearman"), "glue_stsb", "STS-B", _read_stsb,
               "Semantic Textual Similarity Benchmark", size=TaskSize(5_749, ("dev",), (14, 14))),  # train.tsv
    _glue_task("qqp", "similarity", ("not_duplicate", "duplicate"), ("f1", "accuracy"), "glue_qqp", "QQP",
               partial(_read_pairs, first="question1", second="question2", label="is_duplicate", names=BINARY,
                       record=SimilarityExample),
               "Quora Question Pairs", size=TaskSize(363_846, ("dev",), (15, 15))),  # GLUE QQP train.tsv
    _glue_task("mnli", "entailment", NLI_LABELS, ("accuracy",), "glue_mnli", "MNLI", _mnli,
               "MultiNLI, matched (in-genre) evaluation", files={"train": "train.tsv", "dev": "dev_matched.tsv"},
               size=TaskSize(392_702, ("dev",), (28, 14))),  # GLUE MNLI train.tsv
    # One MNLI model, scored on both sets (the paper's Table 2): mnli_mm trains nothing; its train and dev splits
    # are mnli's, carved alike, so its test set (the mismatched dev file) is all it adds.
    _glue_task("mnli_mm", "entailment", NLI_LABELS, ("accuracy",), "glue_mnli", "MNLI", _mnli,
               "MultiNLI, mismatched (cross-genre) evaluation",
               files={"train": "train.tsv", "dev": "dev_mismatched.tsv"}, model_of="mnli"),
    # premise = question, hypothesis = sentence: GLUE's column order (the paper does not say)
    _glue_task("qnli", "entailment", BINARY_NLI_LABELS, ("accuracy",), "glue_qnli", "QNLI",
               partial(_read_pairs, first="question", second="sentence", label="label", names=BINARY_NLI_LABELS,
                       record=EntailmentExample),
               "Question NLI (a SQuAD question vs. one sentence of its paragraph)",
               size=TaskSize(104_743, ("dev",), (13, 36))),  # GLUE QNLIv2 train.tsv (GLUE v1's, the paper's: 108,436)
    _glue_task("rte", "entailment", BINARY_NLI_LABELS, ("accuracy",), "glue_rte", "RTE",
               partial(_read_pairs, first="sentence1", second="sentence2", label="label", names=BINARY_NLI_LABELS,
                       record=EntailmentExample),
               "Recognizing Textual Entailment", size=TaskSize(2_490, ("dev",), (60, 12))),  # GLUE RTE train.tsv
    _task("snli", "entailment", NLI_LABELS, ("accuracy",), ("snli",),
          partial(_splits, folder="snli/snli_1.0", read=read_snli,
                  files={split: f"snli_1.0_{split}.jsonl" for split in ALL_THREE}),
          "Stanford Natural Language Inference",
          size=TaskSize(549_367, (), (18, 11))),  # SNLI 1.0's 550,152 training pairs less 785 without a gold label
    _task("scitail", "entailment", SCITAIL_LABELS, ("accuracy",), ("scitail",),
          partial(_splits, folder="scitail/SciTailV1.1/tsv_format",
                  read=partial(_read_pairs, first="premise", second="hypothesis", label="label",
                               names=SCITAIL_LABELS, record=EntailmentExample,
                               fixed=("premise", "hypothesis", "label")),
                  files={split: f"scitail_1.0_{split}.tsv" for split in ALL_THREE}),
          "SciTail science-question entailment",
          size=TaskSize(23_097, (), (26, 16))),  # SciTailV1.1 tsv_format train (its SNLI-format files hold 23,596)
    _task("race", "multiple_choice", RACE_LETTERS, ("accuracy",), ("race",), load_race,
          "RACE reading comprehension, middle + high school", zero_shot="choice",
          size=TaskSize(87_866, (), (432, 7, 7, 7, 7))),  # questions: 25,421 middle + 62,445 high school
    _task("story_cloze", "multiple_choice", ("ending1", "ending2"), ("accuracy",), ("story_cloze",),
          load_story_cloze, "Story Cloze Test (ROCStories), spring 2016", zero_shot="choice",
          size=TaskSize(1_871, ("dev",), (47, 12, 12))),  # the spring 2016 validation set, which the paper trains on
]
PAPER_TASKS: dict[str, TaskDefinition] = {task.spec.name: task for task in _TASK_LIST}
