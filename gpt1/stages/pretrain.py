"""Stage `pretrain`: the Transformer or the LSTM language model (gpt1/train/pretrain.py trains it)."""

from __future__ import annotations

import json
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from gpt1 import layout
from gpt1.params.schema import Params
from gpt1.kinds import KINDS


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


def add_arguments(parser) -> None:
    # --model: the older name, which dvc.yaml's commands keep (renaming it would change the stages' hashes); params'
    # `model` is the Transformer's size, not a kind
    parser.add_argument("--kind", "--model", dest="kind", choices=KINDS, required=True,
                        help="the language model to pretrain (gpt1/kinds.py)")


def main(args, params: Params) -> None:
    from gpt1.train import launch

    processes = launch.process_count(params.pretrain.processes_per_node, params.pretrain.device)
    if processes > 1 and not launch.under_launcher():
        profiles = [f"--profile={path}" for path in args.profile]
        launch.run_processes(processes, [f"--params={args.params}", *profiles, "pretrain", f"--kind={args.kind}"])
        return
    run(params, args.kind)
