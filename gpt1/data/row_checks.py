"""Checks on the rows of task files, shared by every task loader (the embedded default's, the paper profile's and a
user's own): each returns the checked value or stops the run with one line, `<where>: <what is wrong>`, then
`; <the fix>` where the reader can act on it. `where` names the file and the row: `<file>:<line>`, or
`<file>: example <n>` for an entry of a JSON list.

A check says what is wrong in its own words; a caller whose readers need other words (a user's file names the
params key to fix) passes a `problem` template, filled with `{value}` (the value as Python writes it) and the
check's other fields.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

from gpt1.errors import UserError

DOWNLOAD = "run `gpt1 download` (or check the archive)"


def row_error(where: str, problem: str, fix: str = "") -> UserError:
    """The one line a bad row stops the run with."""
    return UserError(f"{where}: {problem}" + (f"; {fix}" if fix else ""))


def require(path: Path, fix: str = DOWNLOAD) -> Path:
    """`path`, which must be a file."""
    if not path.is_file():
        raise UserError(f"{path} is missing; {fix}")
    return path


def field(where: str, record: dict, name: str):
    """The value of a field the file's format defines (an upstream JSON record's)."""
    if name not in record:
        raise row_error(where, f"missing field {name!r}")
    return record[name]


def column(where: str, row: dict, name: str, fix: str):
    """The value of a column the params name (a user's file): a row without it lists the columns it has."""
    if name not in row:
        raise row_error(where, f"no column {name!r} (found: {', '.join(map(str, row)) or 'none'})", fix)
    return row[name]


def text(where: str, value: object, what: str, fix: str = "") -> str:
    """Text that is not blank, as it is (surrounding spaces kept)."""
    if isinstance(value, str) and value.strip():
        return value
    missing = value is None or isinstance(value, str)
    raise row_error(where, f"the {what} is missing or empty" if missing else f"the {what} holds {value!r}, not text",
                    fix)


def either(names: Sequence[str]) -> str:
    """'a or b', 'a, b or c'."""
    return " or ".join(names) if len(names) < 3 else ", ".join(names[:-1]) + " or " + names[-1]


def label(where: str, value: object, names: Sequence[str],
          problem: str = "unknown label {value} (expected {expected})", fix: str = "") -> int:
    """The index of `value` among the label `names` (`problem`'s fields: value, expected, names)."""
    if value not in names:
        raise row_error(where, problem.format(value=repr(value), expected=either(names), names=names), fix)
    return list(names).index(value)


def number(where: str, value: object, problem: str = "{value} is not a number", fix: str = "") -> float:
    """A finite number, written as text or a JSON number (not a JSON true or false)."""
    try:
        parsed = float(value)
    except (TypeError, ValueError):
        parsed = math.nan
    if isinstance(value, bool) or not math.isfinite(parsed):
        raise row_error(where, problem.format(value=repr(value)), fix)
    return parsed


def within(where: str, value: float, low: float, high: float, what: str) -> float:
    if not low <= value <= high:
        raise row_error(where, f"{what} {value} is outside {low:g} to {high:g}")
    return value
