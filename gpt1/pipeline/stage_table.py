"""What each pipeline stage is, declared once: the CLI, the DAG engines (gpt1/pipeline/dag.py, workflow/Snakefile), the
logs, the report and a cluster read it here.

A stage is a module of gpt1/stages named as its command (`encode-task` -> gpt1/stages/encode_task.py, which is
also dvc.yaml's stage name) with `main(args, params)`, a row below, and its dvc.yaml entry (its command, files and
params: what DVC needs and reads itself). No stage imports this table, so editing a row re-runs nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from gpt1.layout import LOGS

Work = Literal["light", "text", "training"]


@dataclass(frozen=True)
class StageSpec:
    help: str
    # light: one core. text: every core, through worker processes (gpt1/pipeline/parallel.py). training: every core (torch
    # threads), the GPUs a job is given, and (pretrain) the processes torchrun launches.
    work: Work = "light"
    options: bool = False  # the module has add_arguments(parser); imported only for these, so the CLI stays cheap
    # the option (by its argparse dest) that names one job of the stage; its values are the stage's dvc.yaml
    # foreach/matrix axis, whatever that axis is called there
    job: str | None = None
    # (option, folder prefix) that, with --seed, makes a one-off run of one seed of one of the job's runs, logged
    # under the job's log folder (e.g. finetune --task rt_polarity --seed 7: logs/finetune/full/rt_polarity/seed7.log)
    one_off: tuple[str, str] | None = None
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
                          work="training", options=True, job="kind", report="Pretraining"),
    "encode-task": StageSpec("encode one task's fine-tuning examples as BPE ids, once for all its jobs",
                             options=True, job="task"),
    "starting-model": StageSpec("record the weights a fine-tuning method starts from (path and sha256)",
                                options=True, job="method"),
    "finetune": StageSpec("fine-tune one method on every task, every seed, with the paper's input transformations",
                          work="training", options=True, job="method", one_off=("task", "")),
    "layer-transfer": StageSpec("fine-tune one task with only the first k pretrained blocks transferred, every k "
                                "and seed", work="training", options=True, job="task", one_off=("layers", "layers")),
    "transfer-curve": StageSpec("fine-tune one task's full from pretraining checkpoints (transfer over "
                                "pretraining), every checkpoint and seed", work="training", options=True, job="task",
                                one_off=("step", "step")),
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
    """One log per job, so parallel jobs never share a file (the Snakefile declares the same names): by the option
    that names the job, and a one-off `--seed` run in its own file, so it never overwrites the job's log.
    `values`: the command's options by name (None where not given). A tool (`gpt1 benchmark`) logs as a plain stage."""
    spec = STAGES.get(command, StageSpec(help=""))
    if spec.job is None:
        return LOGS / f"{command}.log"
    job = LOGS / module_name(command) / str(values[spec.job])
    seed = values.get("seed")
    if spec.one_off is None or seed is None:
        return job.with_name(f"{job.name}.log")
    option, prefix = spec.one_off
    return job / f"{prefix}{values[option]}" / f"seed{seed}.log"
