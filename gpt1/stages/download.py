"""Stage `download`: fetch every source the selected corpus parts and tasks need into data/raw/<source>."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
from pathlib import Path

from gpt1 import layout
from gpt1.data import registry
from gpt1.errors import UserError
from gpt1.files.atomic import atomic_write_text
from gpt1.params.schema import Params
from gpt1.data.sources import LocalFolder, Source, fetch_source
from gpt1.data.downloads import UrlArchive

log = logging.getLogger(__name__)


def mirrored(source: Source, mirrors: dict) -> Source:
    """`source` fetched from data.mirrors' copy where one is given: same name and members, the pinned
    sha256 of that copy."""
    mirror = mirrors.get(source.name)
    if mirror is None:
        return source
    archive = UrlArchive(url=mirror.url, filename=source.archive.filename, sha256=mirror.sha256)
    return dataclasses.replace(source, archive=archive)


def check_local_folders(params: Params, wanted: list[Source]) -> None:
    """Before anything is fetched: every registration-only source the selection reads has its folder. Where one has
    not, say which task or corpus part needs it, and the one line that runs the rest without it."""
    for source in wanted:
        if not isinstance(source.archive, LocalFolder):
            continue
        folder = params.data.local_paths.get(source.archive.key)
        if folder and Path(folder).is_dir():  # as copy_local_source reads it
            continue
        tasks = [task for task in params.data.tasks if task in registry.TASKS
                 and source.name in registry.TASKS[task].sources]
        parts = [part for part in params.data.corpus if part in registry.CORPORA
                 and source.name in registry.CORPORA[part].sources]
        users = ", ".join([*(f"task {task}" for task in tasks), *(f"corpus part {part}" for part in parts)])
        kept = [task for task in params.data.tasks if task not in tasks]
        leave_out = (f"; or run without it: dvc exp run -S 'data.tasks=[{','.join(kept)}]'" if tasks and kept
                     and not parts else "")
        raise UserError(f"{users} read{'s' if len(tasks) + len(parts) == 1 else ''} '{source.name}', which is not "
                        f"downloaded but a folder of your own: set data.local_paths.{source.archive.key} to it "
                        f"(got {folder!r}){leave_out}")


def run(params: Params, raw: Path = layout.RAW, cache_dir: Path | None = None) -> None:
    # Archives live outside DVC's outputs, so a forced re-run reuses them; GPT1_CACHE names another folder.
    cache_dir = cache_dir or Path(os.environ.get("GPT1_CACHE", layout.CACHE))
    raw.mkdir(parents=True, exist_ok=True)
    wanted = [mirrored(source, params.data.mirrors)
              for source in registry.sources_needed(params.data.corpus, params.data.scored_tasks)]
    check_local_folders(params, wanted)
    for source in wanted:
        members = fetch_source(source, cache_dir, raw, params.data.local_paths)
        log.info("%s: %d file(s) from %s", source.name, len(members), source.archive.label)
    # Sources no longer selected would otherwise linger in the DVC output. Only folders this stage writes (named
    # after a registered source) are removed; anything else a person put here is left alone.
    keep = {source.name for source in wanted} | {"SOURCES.json"}
    for entry in sorted(p for p in raw.iterdir() if p.name not in keep):
        if entry.name in registry.SOURCES and entry.is_dir() and not entry.is_symlink():
            log.info("removing %s (no longer selected)", entry)
            shutil.rmtree(entry)
        else:
            log.warning("%s was not written by `gpt1 download`; left in place (move it out of %s)", entry, raw)
    provenance = {
        source.name: {
            "from": source.archive.label,
            "sha256": None if isinstance(source.archive, LocalFolder) else source.archive.sha256,
            "members": list(source.members),
            "licence": source.licence,
            "description": source.description,
        }
        for source in wanted
    }
    atomic_write_text(raw / "SOURCES.json", json.dumps(provenance, indent=2) + "\n")


def main(args, params: Params) -> None:
    run(params)
