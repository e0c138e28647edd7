"""The record of the weights a Table 5 method starts from: their path and sha256, or none for a random start.

A fine-tuning job depends on its method's record (data/starting_models/<method>.json, the `starting_model`
stage), not on the pretrained checkpoints: the jobs of one matrix stage share one list of dependencies, and
listing both checkpoints made retraining the LSTM re-run every Transformer job, and retraining the Transformer
re-run `no_pretrain`. A record changes only when its own weights do, so DVC re-runs exactly the jobs that
start from them. The finetune stage checks the record against the weights before it trains. Plain files and
hashlib: no torch.
"""

from __future__ import annotations

import json
from pathlib import Path

from gpt1.files.digests import sha256_of
from gpt1.errors import UserError
from gpt1.layout import pretrained_model, starting_model_record


def record(method: str, starts_from: str | None, pretrain_dir: Path) -> dict:
    """What `method` starts from (`starts_from`, from its registry entry: a pretrained model's kind, or None for
    random weights): {"method", "starts_from": null} for random weights, else also the weights' path and sha256."""
    if starts_from is None:
        return {"method": method, "starts_from": None}
    weights = pretrained_model(starts_from, pretrain_dir)
    if not weights.is_file():
        raise UserError(f"{weights} not found: {method!r} starts from the pretrained {starts_from}; run "
                        f"`gpt1 pretrain --kind {starts_from}` first")
    return {"method": method, "starts_from": starts_from, "weights": weights.as_posix(),
            "sha256": sha256_of(weights)}


def record_text(method: str, starts_from: str | None, pretrain_dir: Path) -> str:
    return json.dumps(record(method, starts_from, pretrain_dir), indent=2, sort_keys=True) + "\n"


def check(method: str, starts_from: str | None, pretrain_dir: Path, records_dir: Path) -> None:
    """Stop unless `method`'s record describes the weights it is about to load: a stale record would leave
    DVC believing that the job's results belong to other weights."""
    path = starting_model_record(method, records_dir)
    rerun = f"run `dvc repro` (or `gpt1 starting-model --method {method}`)"
    if not path.is_file():
        raise UserError(f"{path} not found; {rerun}")
    if path.read_text() != record_text(method, starts_from, pretrain_dir):
        raise UserError(f"{path} does not describe the weights {method!r} starts from (they changed after it was "
                        f"written); {rerun}")
