"""Stage `transfer-curve`: fine-tune `full` from the checkpoints kept after pretraining updates S (transfer over
pretraining; the figure is `transfer-figure`): one task, every S of analysis.transfer_curve_steps and every seed of
analysis.layer_transfer_seeds in one process."""

from __future__ import annotations

import logging

from gpt1 import layout
from gpt1.files.atomic import atomic_directory
from gpt1.files.tokens_meta import training_tokens
from gpt1.params import applicability
from gpt1.params.schedule import PretrainSchedule
from gpt1.params.schema import Params
from gpt1.methods import FULL, resolve
from gpt1.kinds import TRANSFORMER
from gpt1.pipeline.one_off import one_off_commands, selected_runs
from gpt1.errors import UserError

ONE_OFF = layout.ONE_OFF / "transfer_curve"  # a one-off seed: outside the DVC output folder
NOT_APPLICABLE_FILE = "not_applicable.txt"
log = logging.getLogger(__name__)


def add_arguments(parser) -> None:
    parser.add_argument("--task", required=True, help="a task of analysis.transfer_curve_tasks")
    parser.add_argument("--step", type=int, default=None,
                        help="with --seed: a one-off run from the checkpoint kept after this pretraining update")
    parser.add_argument("--seed", type=int, default=None,
                        help=f"with --step: run this seed only, into {ONE_OFF}/<task>/step<S>/seed<N> (default: every "
                        "checkpoint and seed params.yaml lists, into the stage's output folder)")


def main(args, params: Params) -> None:
    from gpt1.model.task_tokens import TaskTokens  # torch: only when the stage runs
    from gpt1.train.finetune import FinetuneSettings, run_seeds_over

    reason = applicability.transfer_curve(params)
    if reason and args.step is None:  # nothing to fine-tune from: the job's output says why
        job = layout.transfer_curve_task(args.task)
        with atomic_directory(job) as staging:
            (staging / NOT_APPLICABLE_FILE).write_text(f"{applicability.NOT_APPLICABLE}: {reason}\n")
        log.info("%s: %s", applicability.NOT_APPLICABLE, reason)
        return
    schedule = PretrainSchedule.of(params.pretrain, TRANSFORMER, training_tokens())
    if schedule.updates == 0:  # checkpoints asked for, and none are kept
        raise UserError("the transfer curve fine-tunes from checkpoints of a Transformer pretrained here, and "
                        "pretrain.max_steps is 0 (released weights used as they are): build the other targets, "
                        "e.g. `dvc repro ablation` or `snakemake results/ablation.csv`")
    steps, seeds, root = selected_runs(args, schedule.curve_steps(params.analysis.transfer_curve_steps),
                                       params.analysis.layer_transfer_seeds)
    runs = {step: layout.transfer_curve_runs(args.task, step, root) for step in steps}
    run_seeds_over("pretrain_step", runs, FinetuneSettings.of(params), TaskTokens.load(layout.task_tokens(args.task)),
                   resolve(FULL, params), seeds, pretrain_dir=layout.PRETRAIN,
                   job=layout.transfer_curve_task(args.task, root), what="the transfer curve",
                   reproduce=one_off_commands(args))
