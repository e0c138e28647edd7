"""A user's own tasks and corpus parts (params' data.user_tasks, data.user_corpus), read from their files and
turned into the registry's TaskDefinition and CorpusPart, so that `gpt1 prepare` treats them as any other.

CSV and TSV files have a header row naming the columns, and are quoted as spreadsheets and pandas write them (a
field holding the delimiter, a quote or a line break is in double quotes); JSON lines hold one object per line. Every
file is UTF-8. A problem in a file stops the run with one line naming the file, the line where there is one, and the
fix (a row's values are checked by gpt1.data.row_checks); gpt1/params/user_data.py has the params' shape.
"""

from __future__ import annotations

import csv
from functools import partial
from pathlib import Path
from typing import Iterator

from gpt1.data import row_checks
from gpt1.data.records import (ClassificationExample, EntailmentExample, Example, MultipleChoiceExample,
                               SimilarityExample, TaskSpec)
from gpt1.data.registry import CorpusPart
from gpt1.data.tasks import TaskDefinition
from gpt1.data.user_paths import CORPUS_SUFFIXES, corpus_files
from gpt1.errors import UserError
from gpt1.files.text_files import json_lines, open_text, read_text

# The registered tasks' metrics for each family (gpt1/data/registry.py); a user's similarity task is a regression.
FAMILY_METRICS = {"classification": ("accuracy",), "entailment": ("accuracy",), "similarity": ("pearson", "spearman"),
                  "multiple_choice": ("accuracy",)}
Row = tuple[int, dict]  # (line number in the file, values by column or field)


def user_task(name: str, entry) -> TaskDefinition:
    """The task `entry` (a data.user_tasks model) declares, reading its files when prepare loads it."""
    labels = tuple(getattr(entry, "labels", ()))
    spec = TaskSpec(name=name, family=entry.family, labels=labels, metrics=FAMILY_METRICS[entry.family],
                    source=f"data.user_tasks.{name}", stands_for="")
    return TaskDefinition(spec=spec, sources=(), load=lambda raw: load_splits(name, entry), deduplicate=True)


def user_corpus_part(name: str, pattern: str) -> CorpusPart:
    return CorpusPart(name, (), lambda raw: read_documents(name, pattern), f"your own text ({pattern})")


def check_files(data) -> None:
    """Read every file of the selected user tasks and corpus parts (`data`: params' data section) by the very rules
    `gpt1 prepare` reads them with, and stop at the first problem with the same one-line message. The user_files
    stage runs this before any stage that replaces outputs, so a bad file leaves every earlier output in place."""
    for name in data.tasks:
        if name in data.user_tasks:
            load_splits(name, data.user_tasks[name])
    for name in data.corpus:
        if name in data.user_corpus:
            for _ in read_documents(name, data.user_corpus[name]):
                pass


# --- tasks ------------------------------------------------------------------------------------------


def load_splits(name: str, entry) -> dict[str, list[Example]]:
    splits = {}
    for split, path in entry.files().items():
        key = f"data.user_tasks.{name}.{split}"
        rows = read_rows(Path(path), entry.format_of(path), key)
        build = partial(_EXAMPLE_OF[entry.family], entry=entry, name=name)
        splits[split] = [build(f"{path}:{line}", row) for line, row in rows]
    if entry.family in ("classification", "entailment"):
        found = {example.label for example in splits["train"]}
        if len(found) < 2:
            raise UserError(f"{entry.train}: every training row has the label {entry.labels[found.pop()]!r}; a "
                            f"classifier needs rows of at least two of {entry.labels}")
    return splits


def read_rows(path: Path, file_format: str, key: str) -> list[Row]:
    """The data rows of one declared file, or one line saying why there are none."""
    if not path.is_file():
        raise UserError(f"{path}: no such file ({key}); fix the path in params.yaml")
    rows = list(_jsonl_rows(path) if file_format == "jsonl" else _delimited_rows(path, file_format))
    if not rows:
        carve = "" if key.endswith(".train") else ", or set it to null to carve this split from train"
        raise UserError(f"{path}: no rows ({key}); add rows{carve}")
    return rows


def _delimited_rows(path: Path, file_format: str) -> Iterator[Row]:
    with open_text(path, encoding="utf-8-sig", newline="") as handle:  # -sig: the BOM spreadsheets write
        reader = csv.reader(handle, delimiter="\t" if file_format == "tsv" else ",")
        try:
            header = next(reader, None)
            if header is None:
                return
            repeated = sorted({column for column in header if header.count(column) > 1})
            if repeated:
                raise UserError(f"{path}:1: column {repeated[0]!r} appears twice in the header; rename one")
            for values in reader:
                if not any(value.strip() for value in values):
                    continue  # a blank line
                if len(values) != len(header):
                    hint = "an unquoted " + ("tab" if file_format == "tsv" else "comma") + " inside a field"
                    raise UserError(f"{path}:{reader.line_num}: {len(values)} fields where the header has "
                                    f"{len(header)}; check for {hint}")
                yield reader.line_num, dict(zip(header, values))
        except csv.Error as error:
            raise UserError(f"{path}:{reader.line_num}: {error}; fix the row") from None


def _jsonl_rows(path: Path) -> Iterator[Row]:
    return json_lines(path, "not JSON ({reason}); write one JSON object per line",
                      'not a JSON object; write one object per line, e.g. {"text": "...", "label": "..."}',
                      encoding="utf-8-sig")  # -sig: the BOM some editors write


def _value(row: dict, column: str, where: str, key: str):
    return row_checks.column(where, row, column, f"fix {key} in params.yaml or the file")


def _text(row: dict, column: str, where: str, key: str) -> str:
    return _as_text(_value(row, column, where, key), f"column {column!r}", where)


def _as_text(value, what: str, where: str) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)  # a JSON number is text too (a rating, a year)
    return row_checks.text(where, value, what, "fill it or remove the row")


def label_name(value) -> str:
    """A label as the params' `labels` list spells it: JSON's true/false as written, numbers as text."""
    return str(value).lower() if isinstance(value, bool) else str(value).strip()


def _label(row: dict, entry, name: str, where: str) -> int:
    key = f"data.user_tasks.{name}"
    return row_checks.label(where, label_name(_value(row, entry.label, where, f"{key}.label")), entry.labels,
                            f"label {{value}} is not one of {key}.labels {{names}}",
                            "fix the row, or add the label to labels")


def _classification(where: str, row: dict, entry, name: str) -> Example:
    return ClassificationExample(text=_text(row, entry.text, where, f"data.user_tasks.{name}.text"),
                                 label=_label(row, entry, name, where))


def _entailment(where: str, row: dict, entry, name: str) -> Example:
    key = f"data.user_tasks.{name}"
    return EntailmentExample(premise=_text(row, entry.premise, where, f"{key}.premise"),
                             hypothesis=_text(row, entry.hypothesis, where, f"{key}.hypothesis"),
                             label=_label(row, entry, name, where))


def _similarity(where: str, row: dict, entry, name: str) -> Example:
    key = f"data.user_tasks.{name}"
    score = row_checks.number(where, _value(row, entry.score, where, f"{key}.score"),
                              "score {value} is not a finite number", "write it as e.g. 3.5")
    return SimilarityExample(a=_text(row, entry.a, where, f"{key}.a"), b=_text(row, entry.b, where, f"{key}.b"),
                             label=score)


def _multiple_choice(where: str, row: dict, entry, name: str) -> Example:
    key = f"data.user_tasks.{name}"
    if len(entry.choices) == 1:  # one JSON field holding the list of candidates
        listed = _value(row, entry.choices[0], where, f"{key}.choices")
        if not isinstance(listed, list) or len(listed) < 2:
            raise row_checks.row_error(where, f"{entry.choices[0]!r} must hold a list of at least 2 candidates",
                                       "fix the row")
        choices = tuple(_as_text(value, f"candidate {number} of {entry.choices[0]!r}", where)
                        for number, value in enumerate(listed, start=1))
    else:
        choices = tuple(_text(row, column, where, f"{key}.choices") for column in entry.choices)
    return MultipleChoiceExample(context=_text(row, entry.context, where, f"{key}.context"), choices=choices,
                                 label=_answer(_value(row, entry.answer, where, f"{key}.answer"), choices, where))


def _answer(value, choices: tuple[str, ...], where: str) -> int:
    """The right candidate: the one whose text `value` is, else the 0-based index `value` is."""
    text = label_name(value)
    matching = [index for index, choice in enumerate(choices) if choice.strip() == text]
    if len(matching) == 1:
        return matching[0]
    if not matching and text.isdigit() and int(text) < len(choices) and not isinstance(value, bool):
        return int(text)
    why = (f"candidates {matching} all read {text!r}" if matching else
           f"{text!r} is neither one candidate's text nor an index 0..{len(choices) - 1}")
    raise row_checks.row_error(where, f"no single right answer: {why}", "fix the row")


_EXAMPLE_OF = {"classification": _classification, "entailment": _entailment, "similarity": _similarity,
               "multiple_choice": _multiple_choice}


# --- corpus -----------------------------------------------------------------------------------------


def read_documents(name: str, pattern: str) -> Iterator[str]:
    """A .txt file is one document; a .jsonl file one document per line, from its "text" field."""
    files = corpus_files(pattern)
    if not files:
        raise UserError(f"{pattern}: no {' or '.join(CORPUS_SUFFIXES)} files (data.user_corpus.{name}); point it at "
                        "a folder or glob of UTF-8 text files")
    for file in files:
        if file.suffix.lower() == ".txt":
            yield read_text(file, encoding="utf-8-sig")
            continue
        for line, row in _jsonl_rows(file):
            if not isinstance(row.get("text"), str):
                raise UserError(f'{file}:{line}: no "text" field holding a string; write one {{"text": "..."}} '
                                "object per line")
            yield row["text"]
