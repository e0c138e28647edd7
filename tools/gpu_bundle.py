"""`make gpu-bundle`: one folder from which a GPU machine with no network runs `make gpu-check`.

It holds (1) wheels, for the GPU machine's Python, of every locked package that its image lacks and the training and
analysis stages import, each checked against the lock's sha256, and (2) the default's prepared data for the GPU
profile (corpus tokens, BPE, tasks, the zero-shot tasks' raw files, task tokens), made here by the data stages,
which need spaCy and the downloads a GPU machine may not reach. What the image holds is
tools/gpu-image-packages.txt; the data stages' own packages (spaCy, the Wikipedia parser) stay here.

    python tools/gpu_bundle.py [--out gpu-bundle] [--profile profiles/gpu.yaml] [--python-version 3.12]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements" / "lock.txt"
IMAGE_PACKAGES = ROOT / "tools" / "gpu-image-packages.txt"
# Left out: what only the stages that split raw text import (spaCy and its closure, 55 MB of wheels; the Wikipedia
# parser), which run where the bundle is made (encode-zeroshot too: the GPU machine scores its candidates), and
# the solver of Snakemake's ILP scheduler (16 MB; gpu-check schedules greedily).
LEFT_OUT = {"spacy", "spacy-legacy", "spacy-loggers", "thinc", "blis", "cymem", "preshed", "murmurhash", "srsly",
            "wasabi", "weasel", "confection", "catalogue", "cloudpathlib", "mwparserfromhell", "pulp"}
# What the stages that run on the GPU machine read (dvc.yaml's deps of pretrain ... zeroshot), nothing upstream.
DATA_FOLDERS = ["data/user_files", "data/tasks", "data/bpe", "data/tokens", "data/task_tokens", "data/zero_shot"]
PLATFORMS = ["manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_26_x86_64", "manylinux_2_24_x86_64",
             "manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux1_x86_64"]


def package_names(path: Path) -> set[str]:
    return {line.strip().lower() for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")}


def lock_entries(lock: Path) -> dict[str, str]:
    """{name: its whole entry in the lock (the pin and its hashes)}."""
    entries: dict[str, str] = {}
    name = None
    for line in lock.read_text().splitlines():
        match = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==\S+", line)
        if match:
            name = match.group(1).lower()
            entries[name] = line
        elif name and line.startswith("    --hash"):
            entries[name] += "\n" + line
        elif not line.startswith("    "):
            name = None
    return entries


def carried_packages(lock: Path, image: set[str]) -> dict[str, str]:
    return {name: entry for name, entry in lock_entries(lock).items()
            if name not in image and name not in LEFT_OUT}


def download_wheels(entries: dict[str, str], folder: Path, python_version: str) -> list[Path]:
    """The locked files for `python_version` on x86-64 Linux, hash-checked by pip; a package published only as a
    source archive (pure Python ones) is built into a wheel here."""
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        requirements = Path(scratch) / "requirements.txt"
        requirements.write_text("\n".join(entries.values()) + "\n")
        platforms = [argument for platform in PLATFORMS for argument in ("--platform", platform)]
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--prefer-binary",
                        "--require-hashes", "--python-version", python_version, "--implementation", "cp",
                        *platforms, "-d", str(folder), "-r", str(requirements)], check=True)
    for archive in sorted(folder.glob("*.tar.gz")):
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(folder),
                        str(archive)], check=True)
        archive.unlink()
    return sorted(folder.glob("*.whl"))


def prepare_data(profile: str, cores: int) -> None:
    """The data stages of `profile` through Snakemake, up to every task's tokens and the zero-shot candidates: what
    the bundle carries."""
    sys.path.insert(0, str(ROOT))
    from gpt1.params.files import compose_raw

    tasks = compose_raw(ROOT / "params.yaml", [ROOT / profile])[0]["data"]["tasks"]
    targets = ["data/tokens", "data/zero_shot/tasks.json", *(f"data/task_tokens/{task}" for task in tasks)]
    subprocess.run(["snakemake", "--cores", str(cores), *targets, "--configfile", profile],
                   cwd=ROOT, check=True)


def pack_data(tar_path: Path) -> None:
    """data/... as one xz tar (modification times kept: the DAG engine reads them)."""
    partial = tar_path.with_suffix(".partial")
    with tarfile.open(partial, "w:xz") as archive:
        for folder in DATA_FOLDERS:
            archive.add(ROOT / folder, arcname=folder)
    partial.replace(tar_path)


def sha256(path: Path) -> str:
    return hashlib.file_digest(path.open("rb"), "sha256").hexdigest()


def commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True,
                           text=True).stdout.strip()
    return done.stdout.strip() + ("+changes" if dirty else "") if done.returncode == 0 else "unknown"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "gpu-bundle")
    parser.add_argument("--profile", default="profiles/gpu.yaml", help="the profile whose data the bundle carries")
    parser.add_argument("--python-version", default="3.12", help="the GPU machine's Python (its image's)")
    parser.add_argument("--image-packages", type=Path, default=IMAGE_PACKAGES)
    parser.add_argument("--cores", type=int, default=2, help="cores for the data stages")
    args = parser.parse_args(argv)
    out: Path = args.out.resolve()
    if out.exists() and not (out / "manifest.json").is_file():
        sys.exit(f"gpu-bundle: {out} exists and is not a bundle (no manifest.json); choose another --out")
    partial = out.with_name(out.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    wheels = download_wheels(carried_packages(LOCK, package_names(args.image_packages)), partial / "wheels",
                             args.python_version)
    prepare_data(args.profile, args.cores)
    pack_data(partial / "data.tar.xz")
    manifest = {"made": datetime.now(timezone.utc).isoformat(timespec="seconds"), "commit": commit(),
                "profile": args.profile, "python_version": args.python_version,
                "data": {"file": "data.tar.xz", "folders": DATA_FOLDERS,
                         "sha256": sha256(partial / "data.tar.xz")},
                "wheels": {wheel.name: sha256(wheel) for wheel in wheels}}
    (partial / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    if out.exists():
        shutil.rmtree(out)  # an earlier bundle (it has a manifest): this tool wrote it
    partial.replace(out)
    size = sum(path.stat().st_size for path in out.rglob("*") if path.is_file())
    print(f"gpu-bundle: {out} ({len(wheels)} wheels, {size / 2**20:.1f} MiB)")


if __name__ == "__main__":
    main()
