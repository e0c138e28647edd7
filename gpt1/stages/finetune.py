"""Stage `finetune`: one (task, variant), every seed of finetune.seeds in one process (gpt1/train/finetune.py)."""

from __future__ import annotations

from gpt1 import layout
from gpt1.config import Params
from gpt1.methods import METHODS

ONE_OFF = layout.ONE_OFF / "finetune"


def add_arguments(parser) -> None:
    parser.add_argument("--task", required=True, help="a task of data.tasks")
    parser.add_argument("--variant", choices=list(METHODS), required=True, help="a method of gpt1/methods.py")
    parser.add_argument("--seed", type=int, default=None,
                        help=f"run this seed only, into {ONE_OFF}/<task>/<variant>/seed<S> (default: every seed "
                        "params.yaml lists, into the stage's output folder)")


def main(args, params: Params) -> None:
    from gpt1.model.task_tokens import TaskTokens  # torch: only when the stage runs
    from gpt1.train.finetune import Settings, run_seeds, selected_seeds
    from gpt1.train.starting_weights import check

    seeds = selected_seeds(args.seed, params.finetune.seeds)
    if args.seed is None:  # the stage's run: DVC knows its starting weights by the record it depends on
        check(args.variant, layout.PRETRAIN, layout.STARTING_MODELS)
    out_root = layout.finetune_runs(args.task, args.variant, layout.RESULTS if args.seed is None else layout.ONE_OFF)
    # The first configured seed's weights are kept (model.safetensors, for `gpt1 predict`); a one-off run keeps its own.
    run_seeds(Settings.of(params), TaskTokens.load(layout.task_tokens(args.task)), args.variant, seeds,
              pretrain_dir=layout.PRETRAIN, out_root=out_root, keep_weights_of=seeds[:1])
