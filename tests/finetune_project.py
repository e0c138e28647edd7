"""A tiny project folder for `gpt1 finetune` run as a user runs it (tests/test_finetune_resume.py): params.yaml, a
pretrained tiny Transformer, its starting-model record and the tasks' tokens, as the earlier stages leave them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import torch
import yaml

from gpt1 import layout
from gpt1.params.schema import parse_params
from gpt1.data.paper_tasks import PAPER_TASKS
from gpt1.model.lm import build_model, save_model
from gpt1.model.task_tokens import TaskTokens
from gpt1.train.starting_weights import record_text
from test_finetune import SPECS, TINY_MODEL, tokens_of, write_task
from test_pretrain import subprocess_environment
from test_transforms import tiny_bpe
from tiny import tiny_raw_params

FINETUNE = dict(methods=["full"], seeds=[1, 2], lr=1e-3, batch_size=2, epochs=2, max_train_examples=12,
                max_eval_examples=6, device="cpu", dtype="float32")


def spec_of(task: str):
    return SPECS[task] if task in SPECS else PAPER_TASKS[task].spec


def finetune_project(folder: Path, tasks=("rt_polarity",), **finetune) -> Path:
    """`folder` as a project whose finetune@full jobs can run: every file they read, nothing they write. `tasks`
    may hold a task scored with another's models (mnli_mm): its tokens go where its model's task's job reads them."""
    trained = [task for task in tasks if spec_of(task).model_of is None]
    raw = tiny_raw_params(data={"tasks": trained}, finetune={**FINETUNE, **finetune},
                          analysis={"layer_transfer_tasks": trained[:1], "transfer_curve_tasks": trained[:1]})
    folder.mkdir(parents=True)
    (folder / "params.yaml").write_text(yaml.safe_dump(raw))
    params = parse_params(raw)
    bpe = tiny_bpe()
    bpe.save(folder / layout.BPE)
    for task in tasks:
        spec = spec_of(task)
        # a task scored with another's model has that task's train and dev rows (as `gpt1 prepare` carves them) and
        # a test set of its own
        write_task(folder / layout.TASKS / task, spec, offsets=(0, 100, 300 if spec.model_of else 200))
        tokens: TaskTokens = tokens_of(params, task, folder / layout.TASKS, folder / layout.BPE)
        tokens.save(folder / layout.task_tokens(task, folder / layout.TASK_TOKENS, spec.model_of))
    torch.manual_seed(0)
    transformer = {k: v for k, v in TINY_MODEL.items() if k != "dropout"}
    save_model(build_model("transformer", dict(vocab_size=bpe.vocab_size - 3, **transformer)),
               layout.pretrained_model("transformer", folder / layout.PRETRAIN))
    write_record(folder)
    return folder


def write_record(project: Path, method: str = "full", starts_from: str = "transformer") -> None:
    """The starting-model record, as `gpt1 starting-model` writes it (its paths are relative to the project)."""
    import os

    here = os.getcwd()
    os.chdir(project)
    try:
        layout.starting_model_record(method).parent.mkdir(parents=True, exist_ok=True)
        layout.starting_model_record(method).write_text(record_text(method, starts_from, layout.PRETRAIN))
    finally:
        os.chdir(here)


def run_finetune(project: Path, *args: str, task: str = "rt_polarity", timeout: float = 300) -> subprocess.CompletedProcess:
    """`gpt1 finetune` of method full on `task` (the job finetune@full-<task>), with `args` added."""
    return subprocess.run([sys.executable, "-m", "gpt1.cli", "finetune", "--method", "full", "--task", task, *args],
                          cwd=project, capture_output=True, text=True, env=subprocess_environment(), timeout=timeout)
