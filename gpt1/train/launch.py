"""Several training processes on one node, started through torchrun's own launcher (torch.distributed.run, the
elastic agent): `gpt1 pretrain` with pretrain.processes_per_node above one starts that many copies of its own
command under it, so `dvc repro`, `snakemake` and a SLURM job run the same command and DVC sees the count as a param.

The launched processes find torchrun's variables (RANK, WORLD_SIZE, LOCAL_RANK, ...) and train
(gpt1/train/distributed.py); they never launch again.
"""

from __future__ import annotations

import logging
import os
import re

from gpt1.errors import UserError

log = logging.getLogger(__name__)
# Set for the processes the launcher starts: their log goes on where the launching command's began.
LAUNCHED = "GPT1_LAUNCHED"


def under_launcher() -> bool:
    """Whether this process was started by torchrun (ours or a person's): it trains, it does not launch."""
    return "TORCHELASTIC_RUN_ID" in os.environ or "LOCAL_RANK" in os.environ


def _visible_gpus() -> int:
    """The GPUs this job may use: SLURM's allocation on this node, else CUDA_VISIBLE_DEVICES, else what CUDA sees."""
    for name in ("SLURM_GPUS_ON_NODE", "SLURM_GPUS_PER_NODE"):
        value = os.environ.get(name, "")
        if re.fullmatch(r"(\w+:)?\d+", value):  # "4" or "h100:4"
            return int(value.rsplit(":", 1)[-1])
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return len([device for device in visible.split(",") if device.strip() and device.strip() != "-1"])
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def process_count(setting: int | str, device: str) -> int:
    """pretrain.processes_per_node resolved: a number as given; `auto`, one per visible GPU (one on a CPU, or
    where pretrain.device is cpu)."""
    if setting != "auto":
        return int(setting)
    if device == "cpu":
        return 1
    return max(1, _visible_gpus())


def run_processes(count: int, command: list[str]) -> None:
    """Run `python -m gpt1.cli <command>` in `count` processes on this node under torchrun's elastic agent and wait
    for them. On SIGTERM (a SLURM time limit or pre-emption) the agent passes the signal on; each process saves its
    resume state and stops (gpt1/train/pretrain.py), and the failure is raised here for the job to be retried."""
    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.run import get_args_parser, run

    arguments = get_args_parser().parse_args(
        ["--standalone", f"--nproc-per-node={count}", "--module", "gpt1.cli", *command])
    log.info("starting %d processes on this node through torchrun: gpt1 %s", count, " ".join(command))
    os.environ[LAUNCHED] = "1"
    try:
        run(arguments)
    except ChildFailedError as failure:
        codes = sorted({error.exitcode for error in failure.failures.values()})
        raise LaunchFailed(max(codes), f"{len(failure.failures)} of {count} training processes failed (exit codes "
                           f"{codes}); their messages are above and in the log") from None
    except SignalException as stopped:  # the agent passed the signal on and waited for the processes to save
        raise LaunchFailed(128 + stopped.sigval, f"stopped by {stopped.sigval.name}: the training processes saved "
                           "their resume state; run the stage again to continue") from None
    finally:
        del os.environ[LAUNCHED]


class LaunchFailed(UserError):
    """The launched processes failed; `exit_code` is theirs, so a SLURM job or Snakemake sees the same status."""

    def __init__(self, exit_code: int, message: str):
        super().__init__(message)
        self.exit_code = exit_code
