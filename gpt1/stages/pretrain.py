"""Stage `pretrain`: the Transformer or the LSTM language model (gpt1/train/pretrain.py trains it)."""

from __future__ import annotations

import json
import logging
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from gpt1 import layout
from gpt1.params.applicability import NOT_APPLICABLE, unpretrained
from gpt1.params.schema import Params
from gpt1.kinds import KINDS

log = logging.getLogger(__name__)


def run(params: Params, kind: str, tokens_dir: Path = layout.TOKENS, out_dir: Path | None = None,
        metrics_dir: Path | None = None) -> dict[str, Any]:
    """Pretrain `kind` (one of KINDS); resumes from <out_dir>/resume.pt when one matches.
    Returns the final metrics (the same numbers as <metrics_dir>/metrics.json, without timings); writes the
    validation loss alone to <metrics_dir>/headline.json, the file dvc.yaml declares as metrics."""
    from gpt1.files.atomic import atomic_write_text, exclusive_lock
    from gpt1.train import distributed  # torch: only when the stage runs
    from gpt1.train.pretrain import LOCK_FILE, Trainer
    from gpt1.train.pretrain_settings import PretrainSettings

    out_dir = Path(out_dir or layout.pretraining_run(kind))
    metrics_dir = Path(metrics_dir or layout.pretraining_metrics(kind))
    reason = unpretrained(params.pretrain, kind)
    if reason:
        return not_applicable(kind, reason, out_dir, metrics_dir)
    runtime = distributed.start(params.pretrain.device)
    # Two runs into one folder would delete each other's staged checkpoints: the first one holds the lock.
    lock = exclusive_lock(out_dir / LOCK_FILE, f"pretraining into {out_dir}") if runtime.is_main else nullcontext()
    try:
        with lock:
            settings = PretrainSettings.of(params, kind)
            result = Trainer(settings, kind, Path(tokens_dir), out_dir, metrics_dir, runtime).train()
            if runtime.is_main:
                headline = {kind: {"val_loss": result["val_loss"]}}
                atomic_write_text(metrics_dir / layout.PRETRAINING_HEADLINE, json.dumps(headline, indent=4) + "\n")
            return result
    finally:
        distributed.stop(runtime)


def not_applicable(kind: str, reason: str, out_dir: Path, metrics_dir: Path) -> dict[str, Any]:
    """The declared outputs of a kind with nothing to train, each saying why: a model file holding no weights
    (loading it stops with the reason), no checkpoints, no curves, and the reason as its metrics."""
    import shutil

    from gpt1.files.atomic import atomic_directory, atomic_write_text
    from gpt1.model.safetensors_file import write_not_applicable

    log.info("%s: %s: %s", kind, NOT_APPLICABLE, reason)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_not_applicable(out_dir / layout.MODEL_FILE, reason)
    with atomic_directory(out_dir / layout.CHECKPOINTS):
        pass  # empty: no checkpoint is kept
    shutil.rmtree(metrics_dir / "plots", ignore_errors=True)
    (metrics_dir / "plots" / "metrics").mkdir(parents=True)
    summary = {NOT_APPLICABLE: reason}
    atomic_write_text(metrics_dir / "metrics.json", json.dumps(summary, indent=4) + "\n")
    atomic_write_text(metrics_dir / layout.PRETRAINING_HEADLINE, json.dumps({kind: summary}, indent=4) + "\n")
    return summary


def add_arguments(parser) -> None:
    # not --model: params' `model` is the Transformer's size, and `--model` names a checkpoint file elsewhere
    # (generate, export-weights)
    parser.add_argument("--kind", dest="kind", choices=KINDS, required=True,
                        help="the language model to pretrain (gpt1/kinds.py)")


def main(args, params: Params) -> None:
    from gpt1.train import launch

    processes = launch.process_count(params.pretrain.processes_per_node, params.pretrain.device)
    if processes > 1 and not launch.under_launcher():
        profiles = [f"--profile={path}" for path in args.profile]
        launch.run_processes(processes, [f"--params={args.params}", *profiles, "pretrain", f"--kind={args.kind}"])
        return
    run(params, args.kind)
