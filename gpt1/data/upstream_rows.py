"""Rows of upstream tab-separated files as their authors wrote them (GLUE, SciTail, MRPC): the paper profile's
loaders read them through `columns` and check each value with gpt1.data.row_checks, so a malformed row stops the
run with `<file>:<line>: <what is wrong>`."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Iterator, Sequence

from gpt1.data.row_checks import require, row_error
from gpt1.files.text_files import open_text


def columns(path: Path, wanted: Sequence[str], fixed: Sequence[str] = (),
            score_last: bool = False) -> Iterator[tuple[str, dict[str, str]]]:
    """(where: `<file>:<line>`, {column: value}) for the `wanted` columns of a tab-separated file.

    Fields are read verbatim (QUOTE_NONE): GLUE text holds unbalanced double quotes. The column names come
    from the header line, or from `fixed` for a file without one. With `score_last` a row may hold extra
    fields and the last column is taken from the row's end (STS-B).
    """
    with open_text(require(path), encoding="utf-8-sig", newline="") as handle:
        reader = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = list(fixed) or next(reader, [])
        missing = [name for name in wanted if name not in header]
        if missing:
            raise row_error(f"{path}:1", f"the header lacks {', '.join(missing)} (it has: {', '.join(header)})")
        index = {name: header.index(name) for name in wanted}
        for fields in reader:
            if not fields:
                continue
            where = f"{path}:{reader.line_num}"
            if len(fields) != len(header) and not (score_last and len(fields) > len(header)):
                layout = f" ({', '.join(header)})" if fixed else " as in the header"
                raise row_error(where, f"{len(fields)} tab-separated fields, expected {len(header)}{layout}")
            values = {name: fields[column] for name, column in index.items()}
            if score_last:
                values[header[-1]] = fields[-1]
            yield where, values
