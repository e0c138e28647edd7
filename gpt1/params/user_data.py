"""The schema of a user's own data in params.yaml: `data.user_tasks` (tasks read from CSV, TSV or JSON-lines files,
one entry per task, shaped by its family) and `data.user_corpus` (corpus parts read from folders of .txt/.jsonl
files). gpt1/params/schema.py validates them as part of the data section; gpt1/data/user_tasks.py reads the files.

A file's format is its extension's (.csv, .tsv, .jsonl) unless `format` names it. Relative paths are relative to
the project root, where dvc and snakemake run the stages; `~` is the user's home.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Literal, Optional, Union

from pydantic import AfterValidator, Field, field_validator, model_validator

from gpt1.layout import PIPELINE_FOLDERS
from gpt1.params.section import Section

FORMATS = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl"}


def _not_registered(name: str) -> str:
    from gpt1.data import registry  # late: the registry imports every loader

    if name in registry.TASKS or name in registry.CORPORA:
        raise ValueError(f"'{name}' is a registered task or corpus part; name yours otherwise (e.g. my_{name})")
    return name


def outside_the_pipeline(path: str, key: str = "") -> str:
    """Refuse a path inside data/ or results/: the pipeline writes there (a stage replaces its folders whole, `make
    clean` empties data/), so a user's file there is in harm's way."""
    for root in PIPELINE_FOLDERS:
        resolved, folder = Path(path).resolve(), Path(root).resolve()
        if resolved == folder or folder in resolved.parents:
            named = f"'{key}' ({path})" if key else path
            raise ValueError(f"{named} is inside {root}/, where the pipeline writes; move it outside data/ and "
                             "results/ (e.g. ~/gpt1-data) and point to it")
    return path


def user_path(path: str | None) -> str | None:
    """A path to a user's file, `~` expanded; never inside a pipeline folder."""
    return path and outside_the_pipeline(os.path.expanduser(path))


class UserTaskFiles(Section):
    """What every family declares: the files (dev and test, where null, are carved from train with the seed, as
    for the registered tasks) and how to read them."""

    train: str
    dev: Optional[str] = None
    test: Optional[str] = None
    format: Optional[Literal["csv", "tsv", "jsonl"]] = None
    description: str = ""

    _paths = field_validator("train", "dev", "test")(user_path)

    def files(self) -> dict[str, str]:
        """{split: path} for the splits given."""
        return {split: path for split, path in (("train", self.train), ("dev", self.dev), ("test", self.test))
                if path}

    def format_of(self, path: str) -> str:
        return self.format or FORMATS[Path(path).suffix.lower()]

    @model_validator(mode="after")
    def _formats_known(self):
        for path in self.files().values():
            if self.format is None and Path(path).suffix.lower() not in FORMATS:
                raise ValueError(f"{path}: cannot tell its format from the extension; name the file .csv, .tsv or "
                                 ".jsonl, or set format: csv, tsv or jsonl")
        return self


def _label_names(labels: list) -> list:
    """YAML reads yes/no/true/false unquoted as booleans: a label set of them is a mistake, not a choice."""
    if any(isinstance(label, bool) for label in labels):
        raise ValueError("YAML reads unquoted yes/no/true/false as booleans; quote the labels, e.g. ['yes', 'no']")
    names = [str(label) for label in labels]
    if len(set(names)) != len(names):
        raise ValueError("a label is listed twice; list each once")
    return names


LabelSet = Annotated[list[Union[str, int, float, bool]], Field(min_length=2)]


class ClassificationTask(UserTaskFiles):
    family: Literal["classification"]
    text: str = Field(description="the column (CSV/TSV) or field (JSONL) holding the text")
    label: str = Field(description="the column holding the label, one of `labels`")
    labels: LabelSet

    _labels = field_validator("labels")(_label_names)


class EntailmentTask(UserTaskFiles):
    family: Literal["entailment"]
    premise: str
    hypothesis: str
    label: str
    labels: LabelSet

    _labels = field_validator("labels")(_label_names)


class SimilarityTask(UserTaskFiles):
    """A sentence pair with a score (a regression target, as STS-B)."""

    family: Literal["similarity"]
    a: str
    b: str
    score: str


class MultipleChoiceTask(UserTaskFiles):
    """`choices`: the columns of the candidates, or (JSONL) one field holding a list of them; `answer`: the column
    holding the right candidate's text (it must match exactly one) or its 0-based index."""

    family: Literal["multiple_choice"]
    context: str
    choices: list[str] = Field(min_length=1)
    answer: str

    @model_validator(mode="after")
    def _candidates_in_one_field_only_in_json_lines(self):
        for path in self.files().values():
            if len(self.choices) == 1 and self.format_of(path) != "jsonl":
                raise ValueError(f"choices names one column, but {path} is not JSON lines: list each candidate's "
                                 "column (at least two), or give one .jsonl field holding the list of candidates")
        return self


UserTask = Annotated[Union[ClassificationTask, EntailmentTask, SimilarityTask, MultipleChoiceTask],
                     Field(discriminator="family")]


FAMILY_TAGS = ("classification", "entailment", "similarity", "multiple_choice")
# A user's name becomes a folder (data/tasks/<name>) and a DVC stage suffix (encode_task@<name>).
UserName = Annotated[str, Field(pattern=r"^[a-z0-9_]+$"), AfterValidator(_not_registered)]
CorpusPath = Annotated[str, AfterValidator(user_path)]
