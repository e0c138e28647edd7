"""Rows of upstream files as their authors wrote them, checked field by field: a malformed row stops the
run with `<file>:<line>: <what is wrong>` (the paper profile's loaders read through these)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Iterator, Sequence

from gpt1.errors import UserError
from gpt1.files.text_files import open_text


def require(path: Path) -> Path:
    if not path.is_file():
        raise UserError(f"{path} is missing; run `gpt1 download` for the paper profile (or check the archive)")
    return path


def columns(path: Path, wanted: Sequence[str], fixed: Sequence[str] = (),
             score_last: bool = False) -> Iterator[tuple[int, dict[str, str]]]:
    """(line number, {column: value}) for the `wanted` columns of a tab-separated file.

    Fields are read verbatim (QUOTE_NONE): GLUE text holds unbalanced double quotes. The column names come
    from the header line, or from `fixed` for a file without one. With `score_last` a row may hold extra
    fields and the last column is taken from the row's end (STS-B).
    """
    with open_text(require(path), encoding="utf-8-sig", newline="") as handle:
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


def either(names: Sequence[str]) -> str:
    return " or ".join(names) if len(names) < 3 else ", ".join(names[:-1]) + " or " + names[-1]


def label(path: Path, line: int, value: str, names: Sequence[str]) -> int:
    if value not in names:
        raise UserError(f"{path}:{line}: unknown label {value!r} (expected {either(names)})")
    return list(names).index(value)


def text(path: Path, line: int, value: object, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise UserError(f"{path}:{line}: the {what} is missing or empty")
    return value
