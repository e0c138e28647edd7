"""Stage `transfer-figure`: transfer over pretraining (gpt1/eval/transfer_curve.py) as a table, a trend table
and a figure."""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd

from gpt1 import layout
from gpt1.files.atomic import atomic_path
from gpt1.params import applicability
from gpt1.files.tokens_meta import training_tokens
from gpt1.params.schedule import PretrainSchedule
from gpt1.params.schema import Params
from gpt1.data.records import TaskSpec
from gpt1.eval.figures import not_applicable
from gpt1.eval.transfer_curve import curve_table, curve_trend, plot_curve
from gpt1.kinds import TRANSFORMER
from gpt1.methods import NO_PRETRAIN

log = logging.getLogger(__name__)


def run_transfer_curve(results_dir: Path, tasks_dir: Path, tasks: list[str], steps: list[int], final_step: int,
                       seeds: list[int], tokens_per_update: int, with_zero: bool = True) -> pd.DataFrame:
    """Reads the transfer_curve runs and the finetune stage's full runs (and no_pretrain runs, `with_zero`)
    under `results_dir`; writes transfer_curve.csv, transfer_curve_trend.csv and transfer_curve.png beside them."""
    specs = {task: TaskSpec.from_file(layout.task_spec(task, tasks_dir)) for task in tasks}
    files = layout.Results(results_dir)
    table = curve_table(results_dir, specs, steps, final_step, seeds, tokens_per_update, with_zero)
    with atomic_path(files.transfer_curve) as temporary:
        table.to_csv(temporary, index=False)  # every digit: a page rounds the value once
    trend = curve_trend(results_dir, table, steps, final_step, seeds, with_zero)
    with atomic_path(files.transfer_curve_trend) as temporary:
        trend.to_csv(temporary, index=False)
    log.info("transfer over pretraining, trend:\n%s", trend.to_string(index=False))
    plot_curve(table, files.transfer_curve_plot)
    return table


def main(args, params: Params) -> None:
    analysis = params.analysis
    reason = applicability.transfer_curve(params)
    if reason:
        files = layout.Results(layout.RESULTS)
        not_applicable([files.transfer_curve, files.transfer_curve_trend], files.transfer_curve_plot, reason)
        log.info("%s: %s", applicability.NOT_APPLICABLE, reason)
        return
    schedule = PretrainSchedule.of(params.pretrain, TRANSFORMER, training_tokens())
    run_transfer_curve(layout.RESULTS, layout.TASKS, analysis.transfer_curve_tasks,
                       schedule.curve_steps(analysis.transfer_curve_steps), schedule.updates,
                       analysis.layer_transfer_seeds, params.pretrain.tokens_per_update,
                       with_zero=NO_PRETRAIN in params.finetune.methods)
