"""How fast pretraining's input reads the tokenized corpus on one CPU core: the training sampler (random windows from
the memory-mapped split, gpt1/train/batches.py) over a tokens file of a given size, written to
docs/measurements/NAME.json beside what one GPU's step consumes.

    python tools/measure_loader.py loader --tokens 1430000000 --batch 64 --length 512

The file is made of random token ids (uint16, as `gpt1 tokenize` writes them) unless --file names a real one. The
process is held to one core (os.sched_setaffinity, torch.set_num_threads(1)). The file is read once first, so the
figure is the page-cached rate (a node with the corpus on local disk and the memory to cache it); --cold leaves
that out, so the first pass reads what the page cache does not hold.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import measure  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# What one H200 consumes: the paper model's step at ~550k tokens a second (docs/gpu.md); eight of them need 8 times.
GPU_TOKENS_PER_SECOND = 550_000


def random_tokens(path: Path, count: int, vocab: int = 40_481, chunk: int = 1 << 26) -> None:
    """`count` random uint16 ids into `path`, written in chunks (never the whole file in memory)."""
    rng = np.random.default_rng(0)
    with path.open("wb") as handle:
        for start in range(0, count, chunk):
            handle.write(rng.integers(0, vocab, size=min(chunk, count - start), dtype=np.uint16).tobytes())


def tokens_per_second(tokens: np.ndarray, batch: int, length: int, seconds: float) -> tuple[float, int]:
    """Batches drawn from the start of the stream for `seconds`: tokens a second (inputs) and batches drawn."""
    import torch

    from gpt1.train.batches import WindowSampler

    torch.set_num_threads(1)
    sampler = WindowSampler(tokens, length, seed=0)
    drawn, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        inputs, targets = sampler.batch(drawn * batch, batch)
        drawn += 1
    elapsed = time.perf_counter() - started
    return drawn * batch * length / elapsed, drawn


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("name", help="the file's name in docs/measurements/, without .json")
    parser.add_argument("--tokens", type=int, default=1_430_000_000, help="tokens in the made file (books1: 1.43e9)")
    parser.add_argument("--file", type=Path, help="a real tokens file (data/tokens/train.bin) instead")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--length", type=int, default=512)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--cold", action="store_true", help="do not read the file once first")
    args = parser.parse_args(argv)
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    with tempfile.TemporaryDirectory() as scratch:
        path = args.file or Path(scratch) / "train.bin"
        if args.file is None:
            random_tokens(path, args.tokens)
        tokens = np.memmap(path, dtype=np.uint16, mode="r")
        if not args.cold:
            np.bitwise_xor.reduce(tokens[:: 2048])  # touch every page (4 KB: 2,048 ids), so the file is cached
        rate, batches = tokens_per_second(tokens, args.batch, args.length, args.seconds)
        size = len(tokens)
    needed = 8 * GPU_TOKENS_PER_SECOND
    record = {"tokens_in_file": size, "file_gb": round(size * 2 / 1e9, 2), "batch": args.batch, "length": args.length,
              "batches": batches, "tokens_per_second": round(rate), "cores": 1, "wall_s": args.seconds, "exit_status": 0,
              "precision": "none (no training)",
              "page_cache": "cold" if args.cold else "warm (the file read once first)",
              "eight_gpus_tokens_per_second": needed, "margin": round(rate / needed, 1),
              "source": str(args.file) if args.file else "random uint16 ids", "commit": measure.commit(),
              "date": datetime.date.today().isoformat(), "machine": measure.machine()}
    target = measure.FOLDER / f"{args.name}.json"
    measure.write_record(target, record)
    print(json.dumps({key: record[key] for key in ("tokens_in_file", "tokens_per_second", "margin")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
