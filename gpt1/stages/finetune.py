"""Stage `finetune`: one (task, variant), every seed of finetune.seeds in one process (gpt1/train/finetune.py)."""

from __future__ import annotations

from gpt1.config import VARIANTS, Params


def add_arguments(parser) -> None:
    parser.add_argument("--task", required=True, help="a task of data.tasks")
    parser.add_argument("--variant", choices=VARIANTS, required=True)
    parser.add_argument("--seed", type=int, default=None, help="run this seed only (default: every seed params.yaml lists)")


def main(args, params: Params) -> None:
    from gpt1.train.finetune import run_seeds, selected_seeds  # torch: only when the stage runs

    seeds = selected_seeds(args.seed, params.finetune.seeds)
    run_seeds(params, args.task, args.variant, seeds)
