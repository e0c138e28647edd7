"""Stage `layer-transfer`: fine-tune `full` with only the embeddings and the first k pretrained blocks
transferred, every seed of analysis.layer_transfer_seeds in one process (Figure 2, left)."""

from __future__ import annotations

from gpt1 import layout
from gpt1.config import Params

ONE_OFF = layout.ONE_OFF / "layer_transfer"  # a one-off seed: outside the DVC output folder


def add_arguments(parser) -> None:
    parser.add_argument("--task", required=True, help="a task of data.tasks")
    parser.add_argument("--layers", type=int, required=True, help="pretrained blocks kept")
    parser.add_argument("--seed", type=int, default=None,
                        help=f"run this seed only, into {ONE_OFF}/<task>/layers<k>/seed<S> (default: every seed "
                        "params.yaml lists, into the stage's output folder)")


def main(args, params: Params) -> None:
    from gpt1.model.task_tokens import TaskTokens  # torch: only when the stage runs
    from gpt1.train.finetune import Settings, run_seeds, selected_seeds

    seeds = selected_seeds(args.seed, params.analysis.layer_transfer_seeds)
    out = layout.layer_transfer_runs(args.task, args.layers, layout.RESULTS if args.seed is None else layout.ONE_OFF)
    run_seeds(Settings.of(params), TaskTokens.load(layout.task_tokens(args.task)), "full", seeds,
              pretrain_dir=layout.PRETRAIN, out_root=out, transfer_layers=args.layers)
