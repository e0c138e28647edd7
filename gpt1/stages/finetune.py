"""Stage `finetune`: one method of Table 5 on every task of data.tasks, every seed of finetune.seeds, in one
process (gpt1/train/finetune.py). A job per method: retraining one pretrained model re-runs only its methods.
A task scored with another task's model (its spec's `model_of`: mnli_mm with mnli's) trains nothing: each seed of
that task's run also writes its folder."""

from __future__ import annotations

from gpt1 import layout
from gpt1.params.schema import Params
from gpt1.errors import UserError
from gpt1.pipeline.one_off import selected_runs
from gpt1.methods import METHODS, resolve

ONE_OFF = layout.ONE_OFF / "finetune"


def add_arguments(parser) -> None:
    # --variant: the older name, which dvc.yaml's command keeps (gpt1/methods.py says why)
    parser.add_argument("--method", "--variant", dest="method", choices=list(METHODS), required=True,
                        help="a method of gpt1/methods.py")
    parser.add_argument("--task", default=None, help="with --seed: a one-off run of this task of data.tasks")
    parser.add_argument("--seed", type=int, default=None,
                        help=f"with --task: run this seed only, into {ONE_OFF}/<method>/<task>/seed<S> (default: "
                        "every task and seed params.yaml lists, into the stage's output folder)")


def main(args, params: Params) -> None:
    from gpt1.model.task_tokens import TaskTokens  # torch: only when the stage runs
    from gpt1.train.finetune import FinetuneSettings, run_seeds
    from gpt1.train.finetune_state import job_state
    from gpt1.train.starting_weights import check

    method = resolve(args.method, params.finetune)  # once: the library is handed the method, never its name
    tasks, seeds, root = selected_runs(args, params.data.tasks, params.finetune.seeds)
    if root == layout.RESULTS:  # the stage's job: DVC knows its starting weights by the record it depends on
        check(method.name, method.starts_from, layout.PRETRAIN, layout.STARTING_MODELS)
    settings = FinetuneSettings.of(params)
    job = layout.finetune_method(method.name, root)
    scored_with = scored_with_models(params.data.tasks)
    for task in tasks:
        if task in scored_with and scored_with[task] not in tasks:  # a one-off run of it
            raise UserError(f"'{task}' is scored with {scored_with[task]}'s fine-tuned model and trains none of its "
                            f"own: run --task {scored_with[task]}, which writes both")
    with job_state(layout.training_state(job), f"fine-tuning into {job}") as stop:
        for task in (task for task in tasks if task not in scored_with):
            # The weights of finetune.seeds' first seed are kept (model.safetensors, for `gpt1 predict`); a one-off run
            # keeps its own.
            runs = layout.finetune_runs(task, method.name, root)
            scored_too = [(TaskTokens.load(layout.task_tokens(other)), layout.finetune_runs(other, method.name, root))
                          for other, trained in scored_with.items() if trained == task]
            run_seeds(settings, TaskTokens.load(layout.task_tokens(task)), method, seeds, pretrain_dir=layout.PRETRAIN,
                      out_root=runs, keep_weights_of=seeds[:1], state_root=layout.training_state(runs), stop=stop,
                      scored_too=scored_too)


def scored_with_models(tasks: list[str]) -> dict[str, str]:
    """{task: the task whose model scores it} for the tasks of `tasks` that train none of their own, from the specs
    their encoded tokens carry (params validation made sure that task is among `tasks`)."""
    from gpt1.model.task_tokens import read_spec

    specs = {task: read_spec(layout.task_tokens(task)) for task in tasks}
    return {task: spec.model_of for task, spec in specs.items() if spec.model_of is not None}
