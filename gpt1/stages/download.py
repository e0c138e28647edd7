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
from gpt1.files.atomic import atomic_write_text
from gpt1.params.schema import Params
from gpt1.data.sources import LocalFolder, Source, fetch_source
from gpt1.data.transfer import UrlArchive

log = logging.getLogger(__name__)


def mirrored(source: Source, mirrors: dict) -> Source:
    """`source` fetched from data.mirrors' copy where one is given: same name and members, the pinned
    sha256 of that copy."""
    mirror = mirrors.get(source.name)
    if mirror is None:
        return source
    archive = UrlArchive(url=mirror.url, filename=source.archive.filename, sha256=mirror.sha256)
    return dataclasses.replace(source, archive=archive)


def run(params: Params, raw: Path = layout.RAW, cache_dir: Path | None = None) -> None:
    # Archives live outside DVC's outputs, so a forced re-run reuses them; GPT1_CACHE names another folder.
    cache_dir = cache_dir or Path(os.environ.get("GPT1_CACHE", layout.CACHE))
    raw.mkdir(parents=True, exist_ok=True)
    wanted = [mirrored(source, params.data.mirrors)
              for source in registry.sources_needed(params.data.corpus, params.data.scored_tasks)]
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
