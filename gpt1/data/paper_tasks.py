"""The paper profile: the data GPT-1 was trained and evaluated on, fetched from its real homes.

These sources need the internet (or a folder the user registered for), so they are not the offline
default. Every URL is pinned to the sha256 that huggingface/datasets published for that exact URL in
`datasets/{glue,snli,scitail,race,bookcorpusopen}/dataset_infos.json` (`download_checksums`). For GLUE,
MRPC and SNLI the same values appear in TensorFlow Datasets' `url_checksums/{glue,snli}.txt` (GLUE there
under its older firebase URLs: the same bytes). MRPC comes as Microsoft's two TSV files as SentEval
mirrors them plus GLUE's list of dev ids, which is exactly what GLUE's download script combines.

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
from gpt1.data.sources import LocalFolder, Source, UrlArchive
from gpt1.data.tasks import TaskDefinition

Splits = dict[str, list[Example]]

# --- sources ---------------------------------------------------------------------------------------

GLUE_URL = "https://dl.fbaipublicfiles.com/glue/data/"  # where GLUE's download_glue_data.py fetches from
SENTEVAL_URL = "https://dl.fbaipublicfiles.com/senteval/senteval_data/"


def _glue(name: str, zip_name: str, folder: str, files: tuple[str, ...], sha256: str, licence: str,
          description: str) -> Source:
    archive = UrlArchive(url=GLUE_URL + zip_name, filename=zip_name, sha256=sha256)
    return Source(name=name, archive=archive, members=tuple(f"{folder}/{f}" for f in files), licence=licence,
                  description=description)


def _file(name: str, url: str, sha256: str, licence: str, description: str) -> Source:
    """A single plain file (not an archive); it lands as `data/raw/<name>/<its file name>`."""
    filename = url.rsplit("/", 1)[1]
    return Source(name=name, archive=UrlArchive(url=url, filename=filename, sha256=sha256), members=(filename,),
                  licence=licence, description=description)


_MRPC_LICENCE = "Microsoft Research Paraphrase Corpus terms (research use); SentEval's copy of Microsoft's files"
_SOURCE_LIST = [
    _glue("glue_cola", "CoLA.zip", "CoLA", ("train.tsv", "dev.tsv"),
          "f212fcd832b8f7b435fb991f101abf89f96b933ab400603bf198960dfc32cbff",
          "no licence stated; example sentences quoted from the linguistics literature (research use)",
          "CoLA, Corpus of Linguistic Acceptability (Warstadt et al. 2018), GLUE release"),
    _glue("glue_sst2", "SST-2.zip", "SST-2", ("train.tsv", "dev.tsv"),
          "d67e16fb55739c1b32cdce9877596db1c127dc322d93c082281f64057c16deaa",
          "no licence stated; Rotten Tomatoes review sentences (research use)",
          "SST-2, Stanford Sentiment Treebank, binary (Socher et al. 2013), GLUE release"),
    _file("glue_mrpc_train", SENTEVAL_URL + "msr_paraphrase_train.txt",
          "60a9b09084528f0673eedee2b69cb941920f0b8cd0eeccefc464a98768457f89", _MRPC_LICENCE,
          "MRPC, Microsoft Research Paraphrase Corpus (Dolan & Brockett 2005): training pairs, labelled"),
    _file("glue_mrpc_test", SENTEVAL_URL + "msr_paraphrase_test.txt",
          "a04e271090879aaba6423d65b94950c089298587d9c084bf9cd7439bd785f784", _MRPC_LICENCE,
          "MRPC test pairs, labelled (the pairs of GLUE's MRPC test set)"),
    _file("glue_mrpc_dev_ids", GLUE_URL + "mrpc_dev_ids.tsv",
          "971d7767d81b997fd9060ade0ec23c4fc31cbb226a55d1bd4a1bac474eb81dc7", "GLUE (split definition only)",
          "GLUE's MRPC dev split: the (#1 ID, #2 ID) pairs taken out of msr_paraphrase_train.txt"),
    _glue("glue_stsb", "STS-B.zip", "STS-B", ("train.tsv", "dev.tsv"),
          "e60a6393de5a8b5b9bac5020a1554b54e3691f9d600b775bd131e613ac179c85",
          "per-source terms of the SemEval STS 2012-2017 data (research use)",
          "STS-B, Semantic Textual Similarity Benchmark (Cer et al. 2017), scores 0-5, GLUE release"),
    _glue("glue_qqp", "QQP-clean.zip", "QQP", ("train.tsv", "dev.tsv"),
          "40e7c862c04eb26ee04b67fd900e76c45c6ba8e6d8fab4f8f1f8072a1a3fbae0",
          "Quora Terms of Service (non-commercial use)",
          "QQP, Quora Question Pairs (Iyer et al. 2017), GLUE's cleaned release"),
    _glue("glue_mnli", "MNLI.zip", "MNLI", ("train.tsv", "dev_matched.tsv", "dev_mismatched.tsv"),
          "e7c1d896d26ed6caf700110645df426cc2d8ebf02a5ab743d5a5c68ac1c83633",
          "OANC licence for most genres; fiction under several permissive licences (incl. CC BY-SA 3.0)",
          "MultiNLI, Multi-Genre Natural Language Inference (Williams et al. 2018), GLUE release"),
    _glue("glue_qnli", "QNLIv2.zip", "QNLI", ("train.tsv", "dev.tsv"),
          "e634e78627a29adaecd4f955359b22bf5e70f2cbd93b493f2d624138a0c0e5f5", "CC BY-SA 4.0 (from SQuAD v1.1)",
          "QNLI, Question NLI built from SQuAD v1.1 (Rajpurkar et al. 2016), GLUE v2 release"),
    _glue("glue_rte", "RTE.zip", "RTE", ("train.tsv", "dev.tsv"),
          "6bf86de103ecd335f3441bd43574d23fef87ecc695977a63b82d5efb206556ee",
          "PASCAL RTE challenge data; no licence stated (research use)",
          "RTE, Recognizing Textual Entailment 1, 2, 3 and 5 (Dagan et al. 2006 ...), GLUE release"),
    Source(name="snli", archive=UrlArchive(url="https://nlp.stanford.edu/projects/snli/snli_1.0.zip",
                                           filename="snli_1.0.zip",
                                           sha256="afb3d70a5af5d8de0d9d81e2637e0fb8c22d1235c2749d83125ca43dab0dbd3e"),
           members=("snli_1.0/snli_1.0_train.jsonl", "snli_1.0/snli_1.0_dev.jsonl", "snli_1.0/snli_1.0_test.jsonl"),
           licence="CC BY-SA 4.0",
           description="SNLI 1.0, Stanford Natural Language Inference (Bowman et al. 2015)"),
    Source(name="scitail",
           archive=UrlArchive(url="http://data.allenai.org.s3.amazonaws.com/downloads/SciTailV1.1.zip",
                              filename="SciTailV1.1.zip",
                              sha256="3fccd37350a94ca280b75998568df85fc2fc62843a3198d644fcbf858e6943d5"),
           members=tuple(f"SciTailV1.1/tsv_format/scitail_1.0_{s}.tsv" for s in ("train", "dev", "test")),
           licence="Apache-2.0 (as AI2 lists it)",
           description="SciTail 1.1 (Khot et al. 2018), tsv_format; also served at "
                       "https://ai2-public-datasets.s3.amazonaws.com/scitail/SciTailV1.1.zip"),
    Source(name="race", archive=UrlArchive(url="http://www.cs.cmu.edu/~glai1/data/race/RACE.tar.gz",
                                           filename="RACE.tar.gz",
                                           sha256="b2769cc9fdc5c546a693300eb9a966cec6870bd349fbc44ed5225f8ad33006e5"),
           members=("RACE/train/*.txt", "RACE/dev/*.txt", "RACE/test/*.txt"),
           licence="non-commercial research use only (CMU RACE terms)",
           description="RACE, ReAding Comprehension from Examinations (Lai et al. 2017), middle + high school"),
    Source(name="story_cloze", archive=LocalFolder(key="story_cloze"),
           members=("*cloze_test_val__spring2016*.csv", "*cloze_test_test__spring2016*.csv"),
           licence="registration-only (University of Rochester ROCStories agreement); not redistributable",
           description="Story Cloze Test spring 2016 val + test CSVs (Mostafazadeh et al. 2016); request them at "
                       "https://cs.rochester.edu/nlp/rocstories/ and set data.local_paths.story_cloze"),
    Source(name="books", archive=LocalFolder(key="books"), members=("*.txt",),
           licence="BooksCorpus: unpublished Smashwords books; no redistribution licence",
           description="BooksCorpus-style corpus: a folder of UTF-8 .txt files, one book per file "
                       "(set data.local_paths.books)"),
]
PAPER_SOURCES: dict[str, Source] = {source.name: source for source in _SOURCE_LIST}

# The public re-collection of BooksCorpus ("books1", Shawn Presser, 17,868 books) as HF `bookcorpusopen` pins it.
# Same source name as the local folder, so `load_books` reads either; the host has been offline at times.
BOOKS1_SOURCE = Source(
    name="books",
    archive=UrlArchive(url="https://the-eye.eu/public/AI/pile_preliminary_components/books1.tar.gz",
                       filename="books1.tar.gz",
                       sha256="e3c993cc825df2bdf0f78ef592f5c09236f0b9cd6bb1877142281acc50f446f9"),
    members=("*.epub.txt",),
    licence="BooksCorpus re-collection from Smashwords; no redistribution licence",
    description="books1 (bookcorpusopen): 17,868 books as .epub.txt files",
)

# --- reading helpers -------------------------------------------------------------------------------

BINARY = ("0", "1")
NLI_LABELS = ("entailment", "neutral", "contradiction")
QNLI_LABELS = ("entailment", "not_entailment")
SCITAIL_LABELS = ("entails", "neutral")


def _require(path: Path) -> Path:
    if not path.is_file():
        raise UserError(f"{path} is missing; run `gpt1 download` for the paper profile (or check the archive)")
    return path


def _columns(path: Path, wanted: Sequence[str], fixed: Sequence[str] = (),
             score_last: bool = False) -> Iterator[tuple[int, dict[str, str]]]:
    """(line number, {column: value}) for the `wanted` columns of a tab-separated file.

    Fields are read verbatim (QUOTE_NONE): GLUE text holds unbalanced double quotes. The column names come
    from the header line, or from `fixed` for a file without one. With `score_last` a row may hold extra
    fields and the last column is taken from the row's end (STS-B).
    """
    with open(_require(path), encoding="utf-8-sig", newline="") as handle:
        reader = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = list(fixed) or next(reader, [])
        missing = [name for name in wanted if name not in header]
        if missing:
            raise UserError(f"{path}:1: the header lacks {', '.join(missing)} (it has: {', '.join(header)})")
        index = {name: header.index(name) for name in wanted}
        for fields in reader:
            if not fields:
                continue
            if len(fields) != len(header) and not (score_last and len(fields) > len(header)):
                layout = f" ({', '.join(header)})" if fixed else " as in the header"
                raise UserError(f"{path}:{reader.line_num}: {len(fields)} tab-separated fields, "
                                f"expected {len(header)}{layout}")
            values = {name: fields[column] for name, column in index.items()}
            if score_last:
                values[header[-1]] = fields[-1]
            yield reader.line_num, values


def _either(names: Sequence[str]) -> str:
    return " or ".join(names) if len(names) < 3 else ", ".join(names[:-1]) + " or " + names[-1]


def _label(path: Path, line: int, value: str, names: Sequence[str]) -> int:
    if value not in names:
        raise UserError(f"{path}:{line}: unknown label {value!r} (expected {_either(names)})")
    return list(names).index(value)


def _text(path: Path, line: int, value: object, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise UserError(f"{path}:{line}: the {what} is missing or empty")
    return value


def _read_sentences(path: Path, text: str, label: str, fixed: Sequence[str] = ()) -> list[Example]:
    return [ClassificationExample(text=_text(path, line, row[text], text), label=_label(path, line, row[label], BINARY))
            for line, row in _columns(path, (text, label), fixed)]


def _read_pairs(path: Path, first: str, second: str, label: str, names: Sequence[str], record,
                fixed: Sequence[str] = ()) -> list[Example]:
    """Sentence pairs by column name; `record(first, second, label index)` builds the example."""
    return [record(_text(path, line, row[first], first), _text(path, line, row[second], second),
                   _label(path, line, row[label], names))
            for line, row in _columns(path, (first, second, label), fixed)]


def _read_stsb(path: Path) -> list[Example]:
    examples = []
    for line, row in _columns(path, ("sentence1", "sentence2", "score"), score_last=True):
        try:
            score = float(row["score"])
        except ValueError:
            raise UserError(f"{path}:{line}: bad number {row['score']!r} for the similarity score "
                            "(expected 0 to 5)") from None
        if not 0.0 <= score <= 5.0:
            raise UserError(f"{path}:{line}: similarity score {score} is outside 0 to 5")
        examples.append(SimilarityExample(_text(path, line, row["sentence1"], "sentence1"),
                                          _text(path, line, row["sentence2"], "sentence2"), score))
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
    dev_ids = {(row["#1 ID"], row["#2 ID"]) for _, row in _columns(ids, ("#1 ID", "#2 ID"), fixed=("#1 ID", "#2 ID"))}
    splits: Splits = {"train": [], "dev": [], "test": []}
    for path, is_test in ((raw_dir / "glue_mrpc_train" / "msr_paraphrase_train.txt", False),
                          (raw_dir / "glue_mrpc_test" / "msr_paraphrase_test.txt", True)):
        for line, row in _columns(path, MRPC_COLUMNS):
            example = SimilarityExample(_text(path, line, row["#1 String"], "#1 String"),
                                        _text(path, line, row["#2 String"], "#2 String"),
                                        _label(path, line, row["Quality"], BINARY))
            in_dev = (row["#1 ID"], row["#2 ID"]) in dev_ids
            splits["test" if is_test else "dev" if in_dev else "train"].append(example)
    return splits


def _read_snli(path: Path) -> list[Example]:
    """SNLI 1.0 jsonl; pairs without a gold label ("-": no annotator majority) are dropped, as usual."""
    examples = []
    with open(_require(path), encoding="utf-8") as handle:
        for line, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            try:
                row = json.loads(text)
            except json.JSONDecodeError as error:
                raise UserError(f"{path}:{line}: not a JSON object ({error.msg})") from None
            if not isinstance(row, dict):
                raise UserError(f"{path}:{line}: not a JSON object")
            if row.get("gold_label") != "-":
                examples.append(EntailmentExample(_text(path, line, row.get("sentence1"), "sentence1"),
                                                  _text(path, line, row.get("sentence2"), "sentence2"),
                                                  _label(path, line, str(row.get("gold_label")), NLI_LABELS)))
    return examples


# --- RACE, Story Cloze -----------------------------------------------------------------------------

RACE_LETTERS = ("A", "B", "C", "D")


def _read_race_passage(path: Path) -> list[Example]:
    """One passage per file: {"article", "questions": [...], "options": [[4 strings], ...], "answers": ["C", ...]}."""
    try:
        passage = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise UserError(f"{path}:{error.lineno}: not valid JSON ({error.msg})") from None
    fields = ("article", "questions", "options", "answers")
    if not isinstance(passage, dict) or any(field not in passage for field in fields):
        raise UserError(f"{path}:1: a RACE passage needs the fields {', '.join(fields)}")
    questions, options, answers = passage["questions"], passage["options"], passage["answers"]
    if not len(questions) == len(options) == len(answers):
        raise UserError(f"{path}:1: {len(questions)} questions, {len(options)} option lists, {len(answers)} answers")
    article = _text(path, 1, passage["article"], "article")
    examples = []
    for number, (question, choices, answer) in enumerate(zip(questions, options, answers), start=1):
        if not isinstance(choices, list) or len(choices) != 4 or not all(isinstance(c, str) for c in choices):
            raise UserError(f"{path}: question {number}: expected 4 answer options, got {choices!r}")
        if answer not in RACE_LETTERS:
            raise UserError(f"{path}: question {number}: unknown answer {answer!r} (expected {_either(RACE_LETTERS)})")
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
    with open(path, encoding="utf-8-sig", newline="") as handle:
        reader = csv.DictReader(handle)
        missing = [column for column in STORY_COLUMNS if column not in (reader.fieldnames or [])]
        if missing:
            raise UserError(f"{path}:1: the header lacks {', '.join(missing)}")
        for row in reader:
            line = reader.line_num
            texts = [_text(path, line, row[column], column) for column in STORY_COLUMNS[:6]]
            label = _label(path, line, (row["AnswerRightEnding"] or "").strip(), ("1", "2"))
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


def load_books(raw_dir: Path) -> Iterator[str]:
    """Each .txt file under data/raw/books is one document (a book), in path order; empty files are skipped."""
    folder = Path(raw_dir) / "books"
    paths = sorted(folder.rglob("*.txt"))
    if not paths:
        raise UserError(f"no .txt files in {folder}; set data.local_paths.books and run `gpt1 download`")
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as error:
            raise UserError(f"{path}: not UTF-8 (byte {error.start}); convert the file to UTF-8") from None
        if text.strip():
            yield text


# --- tasks -----------------------------------------------------------------------------------------

TRAIN_DEV = {"train": "train.tsv", "dev": "dev.tsv"}
ALL_THREE = ("train", "dev", "test")


def _task(name: str, family, labels: tuple[str, ...], metrics: tuple[str, ...], sources: tuple[str, ...], load,
          stands_for: str, zero_shot: str | None = None) -> TaskDefinition:
    spec = TaskSpec(name=name, family=family, labels=labels, metrics=metrics, source=",".join(sources),
                    stands_for=stands_for)
    return TaskDefinition(spec=spec, sources=sources, load=load, zero_shot=zero_shot)


def _glue_task(name: str, family, labels, metrics, source: str, folder: str, read, stands_for: str,
               files: dict[str, str] = TRAIN_DEV, zero_shot: str | None = None) -> TaskDefinition:
    load = partial(_splits, folder=f"{source}/{folder}", read=read, files=files)
    return _task(name, family, labels, metrics, (source,), load, stands_for, zero_shot)


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
    _glue_task("mnli_mm", "entailment", NLI_LABELS, ("accuracy",), "glue_mnli", "MNLI", _mnli,
               "MultiNLI, mismatched (cross-genre) evaluation",
               files={"train": "train.tsv", "dev": "dev_mismatched.tsv"}),
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
