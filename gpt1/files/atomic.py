"""Write files so that a crash never leaves a half-written one: write a temporary sibling, then rename.

Never lose a user's files: a folder is replaced whole only where the program owns it (a pipeline output, or a
folder a user named that is absent, empty, or marked as an earlier output of ours: `claim_folder`). Each atomic
write first removes what a killed write to the same target left behind (its `.<name>.*.tmp` siblings), so a
SIGKILL costs disk space only until the stage that owns the target runs again.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable, Iterator

from gpt1.errors import UserError


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


# mkstemp/mkdtemp create private (0600/0700) entries; give the final ones the usual permissions.
FILE_MODE = 0o666 & ~_umask()
DIR_MODE = 0o777 & ~_umask()
# Written into every folder a user names as an output (`claim_folder`): what lets a later run replace it.
OWNER_MARKER = ".gpt1-output"


def _remove_temporaries(folder: Path, pattern: str) -> None:
    for temporary in folder.glob(pattern):
        if temporary.is_dir() and not temporary.is_symlink():
            shutil.rmtree(temporary, ignore_errors=True)
        else:
            temporary.unlink(missing_ok=True)


def remove_leftovers(path: Path | str) -> None:
    """Remove the temporaries that killed atomic writes to `path` left beside it (only those: `.<name>.*.tmp`)."""
    path = Path(path)
    _remove_temporaries(path.parent, f".{glob.escape(path.name)}.*.tmp")


@contextlib.contextmanager
def atomic_path(path: Path | str) -> Iterator[Path]:
    """Yield a temporary path next to `path`; on success it replaces `path`, on error it is removed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_leftovers(path)
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
def atomic_directory(path: Path | str, mark_owner: bool = False) -> Iterator[Path]:
    """Yield an empty temporary directory that replaces `path` whole once the block succeeds.

    Only for folders the program owns: pipeline outputs, or a user's folder that `claim_folder` accepted (then
    pass `mark_owner`, so that the next run may replace it again)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_leftovers(path)
    temporary = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        yield temporary
        if mark_owner:
            (temporary / OWNER_MARKER).write_text("written by gpt1; a later run may replace this folder whole\n")
        os.chmod(temporary, DIR_MODE)
        if path.exists():
            shutil.rmtree(path)
        os.replace(temporary, path)
    finally:
        shutil.rmtree(temporary, ignore_errors=True)


def atomic_write_text(path: Path | str, text: str) -> None:
    with atomic_path(path) as temporary:
        temporary.write_text(text, encoding="utf-8")


def write_text_if_changed(path: Path | str, text: str) -> bool:
    """Write `text` atomically unless the file already holds it; an unchanged file keeps its time stamp, so a
    fingerprint that did not change never looks new to Snakemake. Returns whether it wrote."""
    path = Path(path)
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return False
    atomic_write_text(path, text)
    return True


def atomic_write_bytes(path: Path | str, data: bytes) -> None:
    with atomic_path(path) as temporary:
        temporary.write_bytes(data)


def claim_folder(path: Path | str, force: bool = False) -> Path:
    """Check that a folder a user named as an output may be written whole: it is absent, empty, or an earlier
    output of ours (it holds OWNER_MARKER); `force` replaces any other folder. A folder that holds the working
    directory (`.`, a parent, the home folder) is refused even then."""
    path = Path(path)
    resolved, here = path.resolve(), Path.cwd().resolve()
    if resolved == here or resolved in here.parents or resolved == Path.home().resolve():
        raise UserError(f"refusing to write the output folder {path}: it holds the working directory or your home "
                        "folder, which would be replaced whole; name a new folder, e.g. exported/gpt1-hf")
    if not path.exists() and not path.is_symlink():
        return path
    if path.is_symlink() or not path.is_dir():
        raise UserError(f"{path} exists and is not a folder; name a new folder for the output")
    if force or (path / OWNER_MARKER).is_file() or not any(path.iterdir()):
        return path
    shown = sorted(entry.name for entry in path.iterdir())
    raise UserError(f"{path} holds files gpt1 did not write ({', '.join(shown[:3])}{', ...' if len(shown) > 3 else ''}) "
                    "and would be replaced whole; name a new or empty folder, or pass --force to replace it")


def claim_file(path: Path | str, force: bool, is_ours: Callable[[Path], bool], what: str) -> None:
    """Check that a file a user named as an output may be replaced: it is absent or `is_ours` (or `force`)."""
    path = Path(path)
    if force or not (path.exists() or path.is_symlink()):
        return
    if path.is_symlink() or not path.is_file() or not is_ours(path):
        raise UserError(f"{path} exists and is not {what}, so it would be overwritten; name a new file, or pass "
                        "--force to replace it")


def link_or_copy(source: Path | str, destination: Path | str) -> None:
    """A hard link to `source` at `destination` (no second copy of large weights), or a copy where the file system
    allows no link. Only for files the program replaces whole, never edits in place: a link shares their bytes."""
    try:
        os.link(source, destination)
    except OSError:  # another file system, or links not allowed
        shutil.copy2(source, destination)


def remove_stale_temporaries(folder: Path | str) -> None:
    """Remove every temporary (`.*.tmp`) that killed atomic writes left in `folder`, a folder the program owns
    whole (a run's staging folder); elsewhere use `remove_leftovers`, which touches one target's only."""
    _remove_temporaries(Path(folder), ".*.tmp")


@contextlib.contextmanager
def exclusive_lock(path: Path | str, what: str) -> Iterator[None]:
    """Hold an advisory lock on `path` (created if absent) for the block; a second process asking for it stops
    with one line. The kernel releases it when the process ends, however it ends, so a killed run never
    leaves a stale lock behind."""
    import fcntl

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise UserError(f"{what} is already running ({holder} holds {path}); wait for it to finish or stop "
                            "it, then run again") from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"process {os.getpid()}\n")
        handle.flush()
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
