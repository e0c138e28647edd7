"""What each pipeline stage is, declared once: the CLI, the DAG engines (gpt1/pipeline/dag.py, workflow/Snakefile), the
logs, the report and a cluster read it here.

A stage is a module of gpt1/stages named as its command (`encode-task` -> gpt1/stages/encode_task.py, which is
also dvc.yaml's stage name) with `main(args, params)`, a row below, and its dvc.yaml entry (its command, files and
params: what DVC needs and reads itself). A row names the stage's outputs from gpt1/layout.py, over the same params
as its dvc.yaml entry, so tests/test_dag.py checks that the paths dvc.yaml spells are the ones the stages write.
No stage imports this table, so editing a row re-runs nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Literal

from gpt1 import layout
from gpt1.kinds import KINDS
from gpt1.layout import LOGS

Work = Literal["light", "text", "training"]
# Every path a stage's dvc.yaml entry declares (outs, metrics, plots; all its jobs together), built with
# gpt1/layout.py from the composed params (a dict, as params.yaml and the profiles give it).
Outputs = Callable[[dict], list[Path]]
RESULT_FILES = layout.Results()


def _no_outputs(params: dict) -> list[Path]:
    return []


def methods(params: dict) -> list[str]:
    return params["finetune"]["methods"]


def tasks(params: dict) -> list[str]:
    return params["data"]["tasks"]


def pretraining_outputs(kind: str) -> list[Path]:
    metrics = layout.pretraining_metrics(kind)  # DVCLive names its files inside this folder
    return [layout.pretrained_model(kind), layout.pretraining_checkpoints(kind), metrics / "metrics.json",
            layout.pretraining_headline(kind), metrics / "plots" / "metrics"]


@dataclass(frozen=True)
class OneOff:
    """How `--seed` makes a fine-tuning command a one-off run of one seed, outside the DAG's outputs (under
    layout.ONE_OFF, and logged beside where that run's folder goes: logs/<the folder's path below results/one-off>.log)."""
    # The option that, with --seed, names one run of the job (layer-transfer --layers, transfer-curve --step); None
    # where a job's runs differ by seed alone (finetune: a job is one method on one task).
    option: str | None
    run: Callable[[dict], Path]  # the one-off run's folder (gpt1/layout.py), from the command's options by name


@dataclass(frozen=True)
class StageSpec:
    help: str
    # light: one core. text: every core, through worker processes (gpt1/pipeline/parallel.py). training: every core (torch
    # threads), the GPUs a job is given, and (pretrain) the processes torchrun launches.
    work: Work = "light"
    options: bool = False  # the module has add_arguments(parser); imported only for these, so the CLI stays cheap
    # the options (by their argparse dests) that name one job of the stage: its dvc.yaml foreach/matrix axes in
    # order, whatever those axes are called there
    jobs: tuple[str, ...] = ()
    one_off: OneOff | None = None
    report: str | None = None  # the category its results/ files get in `snakemake --report`
    outputs: Outputs = _no_outputs

    @property
    def trains(self) -> bool:
        return self.work == "training"

    @property
    def uses_every_core(self) -> bool:
        return self.work != "light"


STAGES: dict[str, StageSpec] = {  # by command, in the pipeline's order
    "user-files": StageSpec("fingerprint the files behind params' paths (local_paths, user_tasks, user_corpus, "
                            "import_from, init_from)", outputs=lambda params: [
                                layout.user_files_record(setting)
                                for setting in ("local_paths", "user_data", "import_from", "init_from")]),
    "download": StageSpec("fetch the corpus and task files (sha256-pinned, cached)",
                          outputs=lambda params: [layout.RAW]),
    "prepare": StageSpec("clean, deduplicate, decontaminate and split the corpus; split the tasks", work="text",
                         outputs=lambda params: [layout.TASKS, layout.CORPUS]),
    "bpe": StageSpec("train GPT-1's BPE on the training corpus", work="text", outputs=lambda params: [layout.BPE]),
    "tokenize": StageSpec("encode the corpus splits to memory-mappable token arrays", work="text",
                          outputs=lambda params: [layout.TOKENS]),
    "pretrain": StageSpec("pretrain the Transformer or the LSTM (resumes after interruption)",
                          work="training", options=True, jobs=("kind",), report="Pretraining",
                          outputs=lambda params: [path for kind in KINDS for path in pretraining_outputs(kind)]),
    "encode-task": StageSpec("encode one task's fine-tuning examples as BPE ids, once for all its jobs",
                             options=True, jobs=("task",),
                             outputs=lambda params: [layout.task_tokens(task) for task in tasks(params)]),
    "encode-zeroshot": StageSpec("the zero-shot heuristics' candidates as BPE ids, for every checkpoint",
                                 outputs=lambda params: [layout.zero_shot_tasks()]),
    "starting-model": StageSpec("record the weights a fine-tuning method starts from (path and sha256)",
                                options=True, jobs=("method",), outputs=lambda params: [
                                    layout.starting_model_record(method) for method in methods(params)]),
    "finetune": StageSpec("fine-tune one method on one task, every seed, with the paper's input transformations",
                          work="training", options=True, jobs=("method", "task"), one_off=OneOff(
                              None, lambda given: layout.finetune_run(given["task"], given["method"], given["seed"],
                                                                      layout.ONE_OFF)),
                          outputs=lambda params: [layout.finetune_runs(task, method) for method in methods(params)
                                                  for task in tasks(params)]),
    "layer-transfer": StageSpec("fine-tune one task with only the first k pretrained blocks transferred, every k "
                                "and seed", work="training", options=True, jobs=("task",), one_off=OneOff(
                                    "layers", lambda given: layout.layer_transfer_run(
                                        given["task"], given["layers"], given["seed"], layout.ONE_OFF)),
                                outputs=lambda params: [layout.layer_transfer_task(task)
                                                        for task in params["analysis"]["layer_transfer_tasks"]]),
    "transfer-curve": StageSpec("fine-tune one task's full from each pretraining checkpoint, every seed",
                                work="training", options=True, jobs=("task",),
                                one_off=OneOff("step", lambda given: layout.transfer_curve_run(
                                    given["task"], given["step"], given["seed"], layout.ONE_OFF)),
                                outputs=lambda params: [layout.transfer_curve_task(task)
                                                        for task in params["analysis"]["transfer_curve_tasks"]]),
    "baselines": StageSpec("majority-class and TF-IDF + logistic regression baselines",
                           outputs=lambda params: [RESULT_FILES.baselines]),
    "evaluate": StageSpec("gather every test metric into results/scores*.csv; the headline into results/metrics.json",
                          report="Table 5", outputs=lambda params: [
                              RESULT_FILES.scores, RESULT_FILES.scores_summary, RESULT_FILES.evaluation_metrics]),
    "zeroshot": StageSpec("zero-shot heuristics over the pretraining checkpoints (Figure 2, right)", report="Figure 2",
                          outputs=lambda params: [RESULT_FILES.zero_shot, RESULT_FILES.zero_shot_trend,
                                                  RESULT_FILES.zero_shot_plot]),
    "ablation": StageSpec("Table 5 and full vs the baselines: results/ablation*.csv, ablation.md", report="Table 5",
                          outputs=lambda params: [
                              RESULT_FILES.ablation, RESULT_FILES.ablation_std, RESULT_FILES.ablation_intervals,
                              RESULT_FILES.ablation_markdown, RESULT_FILES.ablation_baselines]),
    "layer-figure": StageSpec("Figure 2 (left): results/layer_transfer.csv, _trend.csv and .png", report="Figure 2",
                              outputs=lambda params: [RESULT_FILES.layer_transfer, RESULT_FILES.layer_transfer_trend,
                                                      RESULT_FILES.layer_transfer_plot]),
    "transfer-figure": StageSpec("transfer over pretraining: results/transfer_curve.csv, _trend.csv and .png",
                                 report="Transfer over pretraining", outputs=lambda params: [
                                     RESULT_FILES.transfer_curve, RESULT_FILES.transfer_curve_trend,
                                     RESULT_FILES.transfer_curve_plot]),
    "paper-tables": StageSpec("the paper's Tables 2-4 beside ours: results/paper_tables.csv and .md",
                              report="Tables 2-4", outputs=lambda params: [
                                  RESULT_FILES.paper_tables, RESULT_FILES.paper_tables_markdown]),
}


def module_name(command: str) -> str:
    """The stage's module under gpt1.stages, also its dvc.yaml name: `encode-task` -> `encode_task`."""
    return command.replace("-", "_")


def command_of(stage_name: str) -> str:
    """The command of a dvc.yaml stage (`finetune@full` -> `finetune`)."""
    return stage_name.split("@")[0].replace("_", "-")


def job_log(command: str, values: dict) -> Path:
    """One log per job, so parallel jobs never share a file (the Snakefile declares the same names): by the options
    that name the job (logs/finetune/full/rt_polarity.log), and a one-off `--seed` run in its own file beside where
    its folder goes (logs/finetune/full/rt_polarity/seed7.log), so it never overwrites the job's log.
    `values`: the command's options by name (None where not given). A tool (`gpt1 benchmark`) logs as a plain stage."""
    spec = STAGES.get(command, StageSpec(help=""))
    if not spec.jobs:
        return LOGS / f"{command}.log"
    if spec.one_off is not None and values.get("seed") is not None:
        run = spec.one_off.run(values).relative_to(layout.ONE_OFF)
        return LOGS / run.with_name(f"{run.name}.log")
    job = LOGS.joinpath(module_name(command), *(str(values[option]) for option in spec.jobs))
    return job.with_name(f"{job.name}.log")
