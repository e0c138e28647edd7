"""Stage `transfer-curve`: fine-tune `full` from the checkpoint kept after pretraining update S, every seed of
analysis.layer_transfer_seeds in one process (transfer over pretraining; the figure is `transfer-figure`)."""

from __future__ import annotations

from gpt1 import layout
from gpt1.config import Params
from gpt1.errors import UserError

ONE_OFF = layout.ONE_OFF / "transfer_curve"  # a one-off seed: outside the DVC output folder


def add_arguments(parser) -> None:
    parser.add_argument("--task", required=True, help="a task of data.tasks")
    parser.add_argument("--step", type=int, required=True,
                        help="the pretraining update whose kept checkpoint starts the run (analysis.transfer_curve_steps)")
    parser.add_argument("--seed", type=int, default=None,
                        help=f"run this seed only, into {ONE_OFF}/<task>/step<S>/seed<N> (default: every seed "
                        "params.yaml lists, into the stage's output folder)")


def main(args, params: Params) -> None:
    from gpt1.model.task_tokens import TaskTokens  # torch: only when the stage runs
    from gpt1.train.finetune import Settings, run_seeds, selected_seeds

    if layout.training_updates(params.pretrain, "transformer") == 0:
        raise UserError("the transfer curve fine-tunes from checkpoints of a Transformer pretrained here, and "
                        "pretrain.max_steps is 0 (released weights used as they are): build the other targets, "
                        "e.g. `dvc repro ablation` or `snakemake results/ablation.csv`")
    seeds = selected_seeds(args.seed, params.analysis.layer_transfer_seeds)
    out = layout.transfer_curve_runs(args.task, args.step, layout.RESULTS if args.seed is None else layout.ONE_OFF)
    run_seeds(Settings.of(params), TaskTokens.load(layout.task_tokens(args.task)), "full", seeds,
              pretrain_dir=layout.PRETRAIN, out_root=out, pretrain_step=args.step)
