"""Read the text files users and upstream archives hand us: UTF-8 (or the encoding a format defines), or one
clear error naming the file and the first bad byte, never a UnicodeDecodeError traceback."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import IO, Iterator

from gpt1.errors import UserError


def not_text(path: Path | str, error: UnicodeDecodeError, encoding: str = "utf-8") -> UserError:
    name = "UTF-8" if encoding.lower().startswith("utf-8") else encoding
    return UserError(f"{path}: not {name} text (byte {error.start}: {error.reason}); save it as {name}")


def read_text(path: Path | str, encoding: str = "utf-8") -> str:
    try:
        return Path(path).read_text(encoding=encoding)
    except UnicodeDecodeError as error:
        raise not_text(path, error, encoding) from None


@contextlib.contextmanager
def open_text(path: Path | str, encoding: str = "utf-8", newline: str | None = None) -> Iterator[IO[str]]:
    """`open` for reading line by line: a bad byte met while reading becomes the same one-line error."""
    with open(path, encoding=encoding, newline=newline) as handle:
        try:
            yield handle
        except UnicodeDecodeError as error:
            raise not_text(path, error, encoding) from None


def read_stdin() -> str:
    """All of standard input as UTF-8 text (whatever the locale), or the one-line error for a bad byte."""
    import sys

    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise not_text("stdin", error) from None
