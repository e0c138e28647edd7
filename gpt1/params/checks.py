"""Checks across sections of params.yaml that the analysis stages rely on: they read runs that other stages write
(Figure 2's all-blocks point is a finetune run; the transfer curve starts from checkpoints pretraining keeps).
`gpt1/params/schema.py` calls them with its Params once every section has validated (they do not import it, which
would make the two modules import each other); each raises ValueError with one line naming the key.
"""

from __future__ import annotations

from gpt1.params.schedule import PretrainSchedule
from gpt1.kinds import TRANSFORMER
from gpt1.methods import FULL


def scored_tasks_fit(params) -> None:
    """The analyses that fine-tune one task cannot take a task scored with another task's models (mnli_mm with
    mnli's): it trains nothing of its own."""
    from gpt1.data.registry import model_of  # the registry imports the data modules: only when validating

    for key in ("layer_transfer_tasks", "transfer_curve_tasks"):
        for task in getattr(params.analysis, key):
            trained = model_of(task)
            if trained is not None:
                raise ValueError(f"analysis.{key}: '{task}' trains no model of its own (it is scored with "
                                 f"{trained}'s): name {trained} instead")


def layer_transfer_fits(params) -> None:
    """Figure 2 (left): accuracy tasks of data.tasks; k < model.n_layer, since the all-blocks point is the
    finetune stage's `full` run, which must exist for every seed and is not re-trained."""
    from gpt1.data.registry import TASKS  # the registry imports the data modules: only when validating

    analysis, depth = params.analysis, params.model.n_layer
    for task in analysis.layer_transfer_tasks:
        if task not in params.data.tasks:
            raise ValueError(f"analysis.layer_transfer_tasks: '{task}' is not one of data.tasks {params.data.tasks}")
        regression = TASKS[task].spec.is_regression if task in TASKS else (
            params.data.user_tasks[task].family == "similarity")  # a user's similarity task is a regression
        if regression:
            raise ValueError(f"analysis.layer_transfer_tasks: '{task}' is a regression task; Figure 2 (left) plots "
                             "accuracy, so name a classification, entailment or multiple-choice task")
    if depth in analysis.layer_transfer_layers:
        raise ValueError(f"analysis.layer_transfer_layers: remove {depth} (model.n_layer): the all-blocks point "
                         "is read from the finetune stage's full runs (results/finetune/full/<task>/seed<s>)")
    outside = [k for k in analysis.layer_transfer_layers if not 0 <= k < depth]
    if outside:
        raise ValueError(f"analysis.layer_transfer_layers: {outside} outside 0 ... {depth - 1} "
                         f"(blocks kept, below model.n_layer = {depth})")
    missing = [seed for seed in analysis.layer_transfer_seeds if seed not in params.finetune.seeds]
    if missing or FULL not in params.finetune.methods:
        raise ValueError(f"analysis.layer_transfer_seeds {analysis.layer_transfer_seeds} must be among "
                         f"finetune.seeds {params.finetune.seeds}, and finetune.methods must include {FULL}: "
                         "Figure 2 (left) reads its all-blocks point from those finetune runs")


def transfer_curve_fits(params) -> None:
    """Transfer over pretraining: tasks of data.tasks; steps the Transformer's pretraining keeps a checkpoint
    after, below its last update (that point is the finetune stage's `full` run)."""
    analysis, schedule = params.analysis, PretrainSchedule.of(params.pretrain, TRANSFORMER)
    for task in analysis.transfer_curve_tasks:
        if task not in params.data.tasks:
            raise ValueError(f"analysis.transfer_curve_tasks: '{task}' is not one of data.tasks {params.data.tasks}")
    if schedule.from_epochs:  # the nearest kept checkpoint is trained (PretrainSchedule.curve_steps)
        return
    kept = list(schedule.transfer_points)
    unknown = [step for step in analysis.transfer_curve_steps if step not in kept]
    # Released weights used as they are (max_steps 0) keep no checkpoints: only the transfer_curve stage stops
    # then (it says why); every other target builds.
    if unknown and schedule.updates > 0:
        raise ValueError(f"analysis.transfer_curve_steps: {unknown} are not kept pretraining checkpoints; with "
                         f"pretrain.max_steps and pretrain.checkpoints as set, choose among {kept} (the last update "
                         "is the finetune stage's full run)")
