"""Reading back the JSON that other stages wrote (a fine-tuning run's metrics.json, results/baselines.json), or
one error that names the file and what writes it: missing, run it; not JSON (cut short), run it again."""

from __future__ import annotations

import json
from pathlib import Path

from gpt1.errors import UserError
from gpt1.layout import RUN_METRICS



def read_json(path: Path, how_to_make: str):
    """The parsed file; `how_to_make` completes "run ... first", e.g. "`gpt1 baselines`" or "the finetune stage"."""
    if not Path(path).is_file():
        raise UserError(f"{path} not found; run {how_to_make} first")
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise UserError(f"{path} is not valid JSON ({error}); run {how_to_make} again") from None


def run_metrics(run: Path, how_to_make: str) -> dict:
    """A run folder's metrics ({"dev": ..., "test": ...})."""
    return read_json(Path(run) / RUN_METRICS, how_to_make)
