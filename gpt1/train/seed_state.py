"""A fine-tuning seed's saved state: fine-tuning never loses work.

A job (a method's every task and seed, a layer-transfer or transfer-curve job's every run) writes a folder per
seed under results/, which DVC deletes before it runs the job again and Snakemake deletes when the job fails. So
a seed also keeps, in a state folder outside those outputs (the stage names it with gpt1/layout.py's
`training_state`):

    <state>/seed<S>/resume.pt        while it trains: the training state (model, optimiser, schedule, update
                                     count, the epoch's batch order and position, loss sums, RNG states), saved
                                     every finetune.save_interval updates and on SIGTERM (gpt1/train/interrupt.py)
    <state>/seed<S>/finished/<i>/    once it is done: the folders it wrote (hard links where the file system allows)
    <state>/seed<S>/finished.json    which output folder each of those is, and the fingerprint they were made with

A retry copies a finished seed's folders back instead of training it again, and resumes an unfinished one at its
saved update; both only where the fingerprint matches: a digest of everything that shapes the seed's files (the
fine-tuning settings it reads, its method and seed, the model it starts from and that model's weights, the tasks'
tokens, the command its card names, and the fingerprint of the code the fine-tuning stages run, which leaves out
comments and docstrings: gpt1/pipeline/code_fingerprint.py), so a changed param or a changed program never reuses
stale work, and an edit that cannot change a seed's files never retrains it. The stage removes its job's state once every seed of the job is done (`job_state`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator, Sequence

from gpt1.files.atomic import atomic_directory, atomic_write_text, exclusive_lock, link_or_copy
from gpt1.layout import seed_run
from gpt1.params.schema import FINE_TUNING
from gpt1.pipeline import code_fingerprint
from gpt1.train.interrupt import StopRequest

RESUME_FILE = "resume.pt"
FINISHED = "finished"
FINISHED_RECORD = "finished.json"
LOCK_FILE = "job.lock"


@contextlib.contextmanager
def job_state(root: Path, what: str) -> Iterator[StopRequest]:
    """Hold a job's state folder for the block (a second process for the same job stops with one line), note a
    stop signal (SIGTERM: the runs save their state after the update in progress and stop, interrupt.Stopped),
    and remove the folder once the block succeeds: every seed is in its output folder then. An interrupted block
    leaves it for the retry."""
    root = Path(root)
    with exclusive_lock(root / LOCK_FILE, what), StopRequest() as stop:
        yield stop
        for entry in root.iterdir():
            if entry.name != LOCK_FILE:
                shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
    (root / LOCK_FILE).unlink(missing_ok=True)
    with contextlib.suppress(OSError):  # another process may have taken the lock meanwhile: its folder stays
        root.rmdir()


def seed_state(state_root: Path | None, seed: int, signature: str, save_interval: int) -> SeedState | None:
    """Seed `seed`'s state under a run's state folder (None: a run that keeps none)."""
    if state_root is None:
        return None
    return SeedState(seed_run(state_root, seed), signature, save_interval)


@dataclass(frozen=True)
class SeedState:
    """One seed's state folder, and the fingerprint its saved work must carry to be used."""
    folder: Path
    signature: str
    save_interval: int

    @property
    def resume_file(self) -> Path:
        return self.folder / RESUME_FILE

    def restore_finished(self, outputs: Sequence[Path]) -> bool:
        """Copy a finished seed's folders back to `outputs` (in the order it was recorded with); False when there is
        no finished seed with this fingerprint and these outputs."""
        record_path = self.folder / FINISHED_RECORD
        if not record_path.is_file():
            return False
        try:
            record = json.loads(record_path.read_text())
        except (OSError, ValueError):
            return False
        wanted = [Path(output).as_posix() for output in outputs]
        kept = [self.folder / FINISHED / str(index) for index in range(len(wanted))]
        if record.get("signature") != self.signature or record.get("outputs") != wanted or \
                not all(folder.is_dir() for folder in kept):
            return False
        for source, output in zip(kept, outputs):
            _copy_folder(source, Path(output))
        return True

    def keep_finished(self, outputs: Sequence[Path]) -> None:
        """Record the seed's finished folders (written whole already), then drop its resume state."""
        with atomic_directory(self.folder / FINISHED) as staging:
            for index, output in enumerate(outputs):
                _link_folder(Path(output), staging / str(index))
        record = {"signature": self.signature, "outputs": [Path(output).as_posix() for output in outputs]}
        atomic_write_text(self.folder / FINISHED_RECORD, json.dumps(record, indent=2) + "\n")
        self.resume_file.unlink(missing_ok=True)


def fingerprint(facts: dict[str, Any]) -> str:
    """The sha256 of `facts` (plain JSON values) and of the gpt1 code: what a seed's files depend on."""
    text = json.dumps({"facts": facts, "code": _code_digest()}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


@lru_cache(maxsize=1)
def _code_digest() -> str:
    """The code the fine-tuning stages run, once per process: the fingerprint of every module their imports reach,
    as their stages' code_fingerprints/ files give it (a module's parsed code, without comments or docstrings). A
    retry with other code trains again."""
    return code_fingerprint.stages_digest(command.replace("-", "_") for command in FINE_TUNING)


def _link_folder(source: Path, destination: Path) -> None:
    destination.mkdir(parents=True)
    for path in sorted(source.iterdir()):
        link_or_copy(path, destination / path.name)


def _copy_folder(source: Path, output: Path) -> None:
    with atomic_directory(output) as staging:
        for path in sorted(source.iterdir()):
            link_or_copy(path, staging / path.name)
