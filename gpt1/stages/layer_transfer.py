"""Stage `layer-transfer`: fine-tune `full` with only the embeddings and the first k pretrained blocks
transferred (Figure 2, left): one task, every k of analysis.layer_transfer_layers and every seed of
analysis.layer_transfer_seeds in one process."""

from __future__ import annotations

from gpt1 import layout
from gpt1.params.schema import Params
from gpt1.methods import FULL, resolve
from gpt1.pipeline.one_off import one_off_commands, selected_runs

ONE_OFF = layout.ONE_OFF / "layer_transfer"  # a one-off seed: outside the DVC output folder


def add_arguments(parser) -> None:
    parser.add_argument("--task", required=True, help="a task of analysis.layer_transfer_tasks")
    parser.add_argument("--layers", type=int, default=None,
                        help="with --seed: a one-off run keeping k pretrained blocks")
    parser.add_argument("--seed", type=int, default=None,
                        help=f"with --layers: run this seed only, into {ONE_OFF}/<task>/layers<k>/seed<S> (default: "
                        "every k and seed params.yaml lists, into the stage's output folder)")


def main(args, params: Params) -> None:
    from gpt1.model.task_tokens import TaskTokens  # torch: only when the stage runs
    from gpt1.train.finetune import FinetuneSettings, run_seeds_over

    depths, seeds, root = selected_runs(args, params.analysis.layer_transfer_layers,
                                        params.analysis.layer_transfer_seeds)
    runs = {layers: layout.layer_transfer_runs(args.task, layers, root) for layers in depths}
    run_seeds_over("transfer_layers", runs, FinetuneSettings.of(params), TaskTokens.load(layout.task_tokens(args.task)),
                   resolve(FULL, params), seeds, pretrain_dir=layout.PRETRAIN,
                   job=layout.layer_transfer_task(args.task, root), what="layer transfer",
                   reproduce=one_off_commands(args))
