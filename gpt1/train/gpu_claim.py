"""One GPU per training job on a machine with several: a job that was given no device claims a free one.

Snakemake (`--resources gpu=K`) and DVC's queue (`dvc queue start -j K`) start up to K training jobs at once on one
machine, and nothing tells each which GPU to use: every one would pick cuda:0. So a single-process job that sees
more than one GPU takes the first whose lock it can hold: a file per GPU in a folder all jobs share (the system's
temporary folder, or $GPT1_GPU_LOCKS), locked with flock, which the kernel releases when the process ends however it
ends (a SIGKILL leaves no stale claim). Jobs that were given their devices keep them: torchrun's processes
(LOCAL_RANK) and SLURM jobs (SLURM_JOB_ID: SLURM sets CUDA_VISIBLE_DEVICES to the GPUs it allotted), and a machine
with one GPU has nothing to choose. A process claims once and keeps its GPU until it ends.
"""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path
from typing import IO

from gpt1.errors import UserError

log = logging.getLogger(__name__)
LOCK_FOLDER_VARIABLE = "GPT1_GPU_LOCKS"
_held: list[tuple[int, IO]] = []  # (index, open lock file) of this process's claim, kept until it ends


def lock_folder() -> Path:
    return Path(os.environ.get(LOCK_FOLDER_VARIABLE) or Path(tempfile.gettempdir()) / "gpt1-gpus")


def given_devices() -> bool:
    """Whether a launcher or a scheduler chose this process's devices (torchrun's LOCAL_RANK, a SLURM job)."""
    return "LOCAL_RANK" in os.environ or "SLURM_JOB_ID" in os.environ


def _names(count: int) -> list[str]:
    """A machine-wide name per visible GPU: its entry in CUDA_VISIBLE_DEVICES (jobs that see different subsets
    still lock the same physical GPU by the same name), else its index."""
    visible = [name.strip() for name in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if name.strip()]
    return visible[:count] if len(visible) >= count else [str(index) for index in range(count)]


def claim(count: int, key: str) -> int:
    """The index of a visible GPU this process holds: the one it claimed before, or the first free of `count`;
    one line naming the fix when every one is held by another job. `key`: the params entry that chose CUDA."""
    if _held:
        return _held[0][0]
    import fcntl

    folder = lock_folder()
    folder.mkdir(parents=True, exist_ok=True)
    for index, name in enumerate(_names(count)):
        path = folder / f"gpu-{name}.lock"
        handle = open(path, "a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            continue
        handle.seek(0)
        handle.truncate()
        handle.write(f"process {os.getpid()}\n")
        handle.flush()
        _held.append((index, handle))
        log.info("claimed GPU %s (cuda:%d) of %d: %s", name, index, count, path)
        return index
    raise UserError(f"all {count} GPUs of this machine are held by other gpt1 training jobs (locks in {folder}); "
                    f"run at most {count} at once (snakemake --resources gpu={count}, dvc queue start --jobs "
                    f"{count}), or set {key} to cpu")


def release() -> None:
    """Give this process's GPU back (a process that ends releases it anyway)."""
    while _held:
        _, handle = _held.pop()
        handle.close()
