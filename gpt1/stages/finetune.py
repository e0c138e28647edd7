"""Stage `finetune`: one (task, variant), every seed of finetune.seeds in one process (gpt1/train/finetune.py)."""

from __future__ import annotations

from pathlib import Path

from gpt1.config import VARIANTS, Params

# A one-off seed goes here, not into the stage's DVC output folder (which only the DAG writes).
ONE_OFF = Path("results/one-off/finetune")


def add_arguments(parser) -> None:
    parser.add_argument("--task", required=True, help="a task of data.tasks")
    parser.add_argument("--variant", choices=VARIANTS, required=True)
    parser.add_argument("--seed", type=int, default=None,
                        help=f"run this seed only, into {ONE_OFF}/<task>/<variant>/seed<S> (default: every seed "
                        "params.yaml lists, into the stage's output folder)")


def main(args, params: Params) -> None:
    from gpt1.train.finetune import run_seeds, selected_seeds  # torch: only when the stage runs

    seeds = selected_seeds(args.seed, params.finetune.seeds)
    out_root = None if args.seed is None else ONE_OFF / args.task / args.variant
    # The first configured seed's weights are kept (model.safetensors, for `gpt1 predict`); a one-off run keeps its own.
    run_seeds(params, args.task, args.variant, seeds, out_root=out_root, keep_weights_of=seeds[:1])
