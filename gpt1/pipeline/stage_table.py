"""What each pipeline stage is, declared once: the CLI, the DAG engines (gpt1/pipeline/dag.py, workflow/Snakefile), the
logs, the report and a cluster read it here.

A stage is a module of gpt1/stages named as its command (`encode-task` -> gpt1/stages/encode_task.py, which is
also dvc.yaml's stage name) with `main(args, params)`, a row below, and its dvc.yaml entry (its command, files and
params: what DVC needs and reads itself). No stage imports this table, so editing a row re-runs nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Literal

from gpt1 import layout
from gpt1.layout import LOGS

Work = Literal["light", "text", "training"]


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

    @property
    def trains(self) -> bool:
        return self.work == "training"

    @property
    def uses_every_core(self) -> bool:
        return self.work != "light"


STAGES: dict[str, StageSpec] = {  # by command, in the pipeline's order
    "user-files": StageSpec("fingerprint the files behind params' paths (local_paths, user_tasks, user_corpus, "
                            "import_from, init_from)"),
    "download": StageSpec("fetch the corpus and task files (sha256-pinned, cached)"),
    "prepare": StageSpec("clean, deduplicate, decontaminate and split the corpus; split the tasks", work="text"),
    "bpe": StageSpec("train GPT-1's BPE on the training corpus", work="text"),
    "tokenize": StageSpec("encode the corpus splits to memory-mappable token arrays", work="text"),
    "pretrain": StageSpec("pretrain the Transformer or the LSTM language model (resumes after interruption)",
                          work="training", options=True, jobs=("kind",), report="Pretraining"),
    "encode-task": StageSpec("encode one task's fine-tuning examples as BPE ids, once for all its jobs",
                             options=True, jobs=("task",)),
    "starting-model": StageSpec("record the weights a fine-tuning method starts from (path and sha256)",
                                options=True, jobs=("method",)),
    "finetune": StageSpec("fine-tune one method on one task, every seed, with the paper's input transformations",
                          work="training", options=True, jobs=("method", "task"), one_off=OneOff(
                              None, lambda given: layout.finetune_run(given["task"], given["method"], given["seed"],
                                                                      layout.ONE_OFF))),
    "layer-transfer": StageSpec("fine-tune one task with only the first k pretrained blocks transferred, every k "
                                "and seed", work="training", options=True, jobs=("task",), one_off=OneOff(
                                    "layers", lambda given: layout.layer_transfer_run(
                                        given["task"], given["layers"], given["seed"], layout.ONE_OFF))),
    "transfer-curve": StageSpec("fine-tune one task's full from pretraining checkpoints (transfer over "
                                "pretraining), every checkpoint and seed", work="training", options=True, jobs=("task",),
                                one_off=OneOff("step", lambda given: layout.transfer_curve_run(
                                    given["task"], given["step"], given["seed"], layout.ONE_OFF))),
    "baselines": StageSpec("majority-class and TF-IDF + logistic regression baselines"),
    "evaluate": StageSpec("gather every test metric into results/scores*.csv; the headline into results/metrics.json",
                          report="Table 5"),
    "zeroshot": StageSpec("zero-shot heuristics over the pretraining checkpoints (Figure 2, right)", report="Figure 2"),
    "ablation": StageSpec("Table 5 and full vs the baselines: results/ablation*.csv, ablation.md", report="Table 5"),
    "layer-figure": StageSpec("Figure 2 (left): results/layer_transfer.csv, _trend.csv and .png", report="Figure 2"),
    "transfer-figure": StageSpec("transfer over pretraining: results/transfer_curve.csv, _trend.csv and .png",
                                 report="Transfer over pretraining"),
    "paper-tables": StageSpec("the paper's Tables 2-4 beside ours: results/paper_tables.csv and .md",
                              report="Tables 2-4"),
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
