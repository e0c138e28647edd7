"""Read the text files users and upstream archives hand us: UTF-8 (or the encoding a format defines), or one
clear error naming the file, the line and the byte offset of the first bad byte, never a UnicodeDecodeError
traceback."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import IO, Iterator

from gpt1.errors import UserError


def _encoding_name(encoding: str) -> str:
    return "UTF-8" if encoding.lower().replace("_", "-").startswith("utf-8") else encoding


def not_text(path: Path | str, data: bytes, encoding: str = "utf-8") -> UserError:
    """The one-line error for `data` (the whole file's bytes), which `encoding` cannot decode: the line and the
    byte offset are counted in the file itself. (A decoder reading line by line reports an offset inside its
    current chunk, right only in a file's first few kilobytes, so the bytes are decoded again here.)"""
    name = _encoding_name(encoding)
    try:
        data.decode("utf-8" if name == "UTF-8" else encoding)  # utf-8-sig's offsets would not count the BOM
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        return UserError(f"{path}: not {name} text at line {line}, byte {error.start} of the file ({error.reason}); "
                         f"save it as {name}")
    return UserError(f"{path}: not {name} text; save it as {name}")  # only if the file changed while being read


def read_text(path: Path | str, encoding: str = "utf-8") -> str:
    try:
        return Path(path).read_text(encoding=encoding)
    except UnicodeDecodeError:
        raise not_text(path, Path(path).read_bytes(), encoding) from None


@contextlib.contextmanager
def open_text(path: Path | str, encoding: str = "utf-8", newline: str | None = None) -> Iterator[IO[str]]:
    """`open` for reading line by line: a bad byte met while reading becomes the same one-line error."""
    with open(path, encoding=encoding, newline=newline) as handle:
        try:
            yield handle
        except UnicodeDecodeError:
            raise not_text(path, Path(path).read_bytes(), encoding) from None


def json_lines(path: Path | str, not_json: str, not_object: str,
               encoding: str = "utf-8") -> Iterator[tuple[int, dict]]:
    """(line number, object) for each non-blank line of a JSON-lines file. A line that is not JSON stops the run
    with `<file>:<line>: ` and `not_json`, its `{reason}` the parser's; a line holding JSON but not an object, with
    `not_object`: each caller says what its readers should do about it."""
    with open_text(path, encoding=encoding) as handle:
        for line, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            try:
                row = json.loads(text)
            except json.JSONDecodeError as error:
                raise UserError(f"{path}:{line}: " + not_json.format(reason=error.msg)) from None
            if not isinstance(row, dict):
                raise UserError(f"{path}:{line}: {not_object}")
            yield line, row


def read_stdin() -> str:
    """All of standard input as UTF-8 text (whatever the locale), or the one-line error for a bad byte."""
    import sys

    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise not_text("stdin", data) from None
