"""One process or several (torchrun): who am I, which device, the few collectives training needs, and each
process's random number generators (seeded per rank, captured and restored for exact resumption).

torchrun sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT; without them this is a single
process and every collective below is the identity. Backends: NCCL on CUDA, gloo on CPU.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.distributed as dist

from gpt1.errors import UserError
from gpt1.train import precision


@dataclass(frozen=True)
class Runtime:
    rank: int
    world_size: int
    local_rank: int
    device: torch.device

    @property
    def is_main(self) -> bool:
        """Only this process writes files and logs metrics."""
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world_size > 1


def _environment_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        raise UserError(f"environment variable {name}={value!r} is not an integer; launch with torchrun") from None


def start(device: str = "auto", key: str = "pretrain.device") -> Runtime:
    """Read torchrun's variables, pick the device and join the process group (several processes only)."""
    rank, world_size = _environment_int("RANK", 0), _environment_int("WORLD_SIZE", 1)
    local_rank = _environment_int("LOCAL_RANK", rank)
    launched = "LOCAL_RANK" in os.environ or "RANK" in os.environ  # else one job: it may claim a free GPU
    chosen = precision.resolve_device(device, local_rank if launched else None, key, claim=True)
    if chosen.type == "cuda":
        torch.cuda.set_device(chosen)
    if world_size > 1 and not dist.is_initialized():
        backend = "nccl" if chosen.type == "cuda" else "gloo"
        dist.init_process_group(backend=backend, rank=rank, world_size=world_size,
                                device_id=chosen if chosen.type == "cuda" else None)
    return Runtime(rank=rank, world_size=world_size, local_rank=local_rank, device=chosen)


def stop(runtime: Runtime) -> None:
    if runtime.distributed and dist.is_initialized():
        dist.destroy_process_group()


def all_reduce_sum(tensor: torch.Tensor, runtime: Runtime) -> torch.Tensor:
    if runtime.distributed:
        dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
    return tensor


def all_gather_objects(value: Any, runtime: Runtime) -> list[Any]:
    """Every rank's `value`, in rank order (e.g. each rank's RNG states for a resume checkpoint)."""
    if not runtime.distributed:
        return [value]
    gathered: list[Any] = [None] * runtime.world_size
    dist.all_gather_object(gathered, value)
    return gathered


def barrier(runtime: Runtime) -> None:
    if runtime.distributed:
        dist.barrier()


def seed_everything(seed: int, rank: int) -> None:
    """Different dropout masks per rank, all derived from the one seed."""
    derived = int(np.random.SeedSequence([seed, rank, 1]).generate_state(1)[0])
    torch.manual_seed(derived)
    np.random.seed(derived)
    random.seed(derived)


def capture_rng() -> dict[str, Any]:
    """This process's RNG states as tensors and plain lists (torch.load(weights_only=True) reads them)."""
    numpy_state = np.random.get_state(legacy=False)
    python_version, python_state, python_gauss = random.getstate()
    return {
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state() if torch.cuda.is_available() and torch.cuda.is_initialized() else None,
        "numpy": {"key": torch.from_numpy(numpy_state["state"]["key"].astype(np.int64)),
                  "pos": int(numpy_state["state"]["pos"]), "has_gauss": int(numpy_state["has_gauss"]),
                  "gauss": float(numpy_state["gauss"])},
        "python": [python_version, list(python_state), python_gauss],
    }


def restore_rng(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    if state["cuda"] is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state(state["cuda"])
    numpy_state = state["numpy"]
    np.random.set_state({"bit_generator": "MT19937",
                         "state": {"key": numpy_state["key"].numpy().astype(np.uint32), "pos": numpy_state["pos"]},
                         "has_gauss": numpy_state["has_gauss"], "gauss": numpy_state["gauss"]})
    version, python_state, gauss = state["python"]
    random.setstate((version, tuple(python_state), gauss))
