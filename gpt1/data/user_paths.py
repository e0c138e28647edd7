"""The files behind a user's own data in params (data.user_tasks, data.user_corpus), listed once: the user_files
stage fingerprints exactly the files that `gpt1 prepare` reads (gpt1/data/user_tasks.py), no more, no fewer."""

from __future__ import annotations

import glob
import itertools
from pathlib import Path

CORPUS_SUFFIXES = (".txt", ".jsonl")
_GLOB_CHARACTERS = set("*?[")


def selected_paths(data) -> dict[str, str]:
    """{params key: path} of the user's files the selected tasks and corpus parts read (`data`: params' data
    section); declared but unselected entries are never read, so they are not watched either."""
    paths = {}
    for name in data.tasks:
        if name in data.user_tasks:
            paths |= {f"data.user_tasks.{name}.{split}": path for split, path in data.user_tasks[name].files().items()}
    for name in data.corpus:
        if name in data.user_corpus:
            paths[f"data.user_corpus.{name}"] = data.user_corpus[name]
    return paths


def corpus_root(pattern: str) -> Path:
    """The folder a corpus part's files are named relative to: the folder itself, a glob's fixed leading folders,
    or a single file's own folder."""
    path = Path(pattern)
    if path.is_dir():
        return path
    if _GLOB_CHARACTERS & set(pattern):
        return Path(*itertools.takewhile(lambda part: not _GLOB_CHARACTERS & set(part), path.parts))
    return path.parent


def corpus_files(pattern: str) -> list[Path]:
    """A corpus part's documents: the file itself, every .txt/.jsonl file below a folder, or the .txt/.jsonl files
    a glob matches (`**` for any depth), sorted; nothing where none exist (its reader says so)."""
    path = Path(pattern)
    if path.is_file():
        return [path]
    if path.is_dir():
        found = path.rglob("*")
    elif _GLOB_CHARACTERS & set(pattern):
        found = map(Path, glob.glob(pattern, recursive=True))
    else:
        return []
    return sorted(file for file in found if file.is_file() and file.suffix.lower() in CORPUS_SUFFIXES)
