"""Stage `finetune`: one job per (method, task): every seed of finetune.seeds of one Table 5 method on one task of
data.tasks, in one process (gpt1/train/finetune.py). A cluster runs the jobs side by side, a job's size is one
task's, and retraining one pretrained model re-runs only the jobs of the methods that start from it.

A task scored with another task's models (its spec's `model_of`: mnli_mm with mnli's) has no job of its own: the
job of the task it names scores each seed's model on it too, into its own output folder."""

from __future__ import annotations

from gpt1 import layout
from gpt1.params.schema import Params
from gpt1.errors import UserError
from gpt1.pipeline.one_off import one_off, one_off_commands
from gpt1.methods import resolve

ONE_OFF = layout.ONE_OFF / layout.FINETUNE


def add_arguments(parser) -> None:
    parser.add_argument("--method", dest="method", required=True, help="an entry of params.yaml's `methods`")
    parser.add_argument("--task", required=True, help="a task of data.tasks (its tokens: `gpt1 encode-task`)")
    parser.add_argument("--seed", type=int, default=None,
                        help=f"run this seed only, into {ONE_OFF}/<method>/<task>/seed<S> (default: every seed of "
                        "finetune.seeds, into the stage's output folder)")


def main(args, params: Params) -> None:
    from gpt1.model.task_tokens import TaskTokens  # torch: only when the stage runs
    from gpt1.train.finetune import FinetuneSettings, run_seeds
    from gpt1.train.seed_state import job_state
    from gpt1.train.starting_weights import check

    method = resolve(args.method, params)  # once: the library is handed the method, never its name
    task, trained = args.task, params.data.model_of(args.task)
    if trained is not None:
        raise UserError(f"--task {task} is scored with {trained}'s fine-tuned models, by {trained}'s job: run "
                        f"--task {trained}")
    seeds, root = ([args.seed], layout.ONE_OFF) if one_off(args) else (list(params.finetune.seeds), layout.RESULTS)
    if root == layout.RESULTS:  # the stage's job: DVC knows its starting weights by the record it depends on
        check(method.name, method.starts_from, layout.PRETRAIN, layout.STARTING_MODELS)
    runs = layout.finetune_runs(task, method.name, root)
    scored_too = [(TaskTokens.load(layout.task_tokens(other, model_of=task)),
                   layout.finetune_runs(other, method.name, root, model_of=task))
                  for other in params.data.scored_with(task)]
    with job_state(layout.training_state(runs), f"fine-tuning into {runs}") as stop:
        # The first configured seed's weights are kept (model.safetensors, for `gpt1 predict`); a one-off run keeps
        # its own.
        run_seeds(FinetuneSettings.of(params), TaskTokens.load(layout.task_tokens(task)), method, seeds,
                  pretrain_dir=layout.PRETRAIN, out_root=runs, keep_weights_of=seeds[:1],
                  state_root=layout.training_state(runs), stop=stop, scored_too=scored_too,
                  reproduce=one_off_commands(args))
