"""Write files so that a crash never leaves a half-written one: write a temporary sibling, then rename."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterator


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


# mkstemp/mkdtemp create private (0600/0700) entries; give the final ones the usual permissions.
FILE_MODE = 0o666 & ~_umask()
DIR_MODE = 0o777 & ~_umask()


@contextlib.contextmanager
def atomic_path(path: Path | str) -> Iterator[Path]:
    """Yield a temporary path next to `path`; on success it replaces `path`, on error it is removed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(handle)
    temporary = Path(temporary)
    try:
        yield temporary
        os.chmod(temporary, FILE_MODE)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


@contextlib.contextmanager
def atomic_directory(path: Path | str) -> Iterator[Path]:
    """Yield an empty temporary directory that replaces `path` whole once the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        yield temporary
        os.chmod(temporary, DIR_MODE)
        if path.exists():
            shutil.rmtree(path)
        os.replace(temporary, path)
    finally:
        shutil.rmtree(temporary, ignore_errors=True)


def atomic_write_text(path: Path | str, text: str) -> None:
    with atomic_path(path) as temporary:
        temporary.write_text(text, encoding="utf-8")


def atomic_write_bytes(path: Path | str, data: bytes) -> None:
    with atomic_path(path) as temporary:
        temporary.write_bytes(data)


def remove_stale_temporaries(folder: Path | str) -> None:
    """Remove what a killed atomic write left in `folder`: its temporary files and folders (`.*.tmp`)."""
    for temporary in Path(folder).glob(".*.tmp"):
        if temporary.is_dir() and not temporary.is_symlink():
            shutil.rmtree(temporary, ignore_errors=True)
        else:
            temporary.unlink(missing_ok=True)
