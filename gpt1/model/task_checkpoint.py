"""A fine-tuned task model on disk: one safetensors file that rebuilds itself.

The metadata holds what `gpt1 predict` needs besides the BPE: the language model's kind and config (its
vocabulary already holds the three special tokens), the task's spec (family, labels, metrics) and the
context length the run encoded its examples to. One metadata key, so two runs write the same bytes.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

import torch

from gpt1.data.records import TaskSpec
from gpt1.errors import UserError
from gpt1.model import safetensors_file
from gpt1.model.heads import TaskModel
from gpt1.model.lm import build_model

METADATA_KEY = "gpt1_task"


@dataclass(frozen=True)
class TaskRun:
    """What a saved task model was: enough to rebuild it and encode new examples as its run did."""

    task: str
    method: str  # an entry of params.yaml's `methods`
    seed: int
    n_ctx: int
    spec: TaskSpec


def save_task_model(task_model: TaskModel, run: TaskRun, path: Path | str) -> None:
    language_model = task_model.language_model
    safetensors_file.write(task_model, path, METADATA_KEY, {
        "kind": language_model.kind, "config": dataclasses.asdict(language_model.config), "run": dataclasses.asdict(run)})


def load_task_model(path: Path | str, device: str | torch.device = "cpu") -> tuple[TaskModel, TaskRun]:
    """The saved task model (eval mode) and what it was trained as."""
    path = Path(path)
    entry, tensors = safetensors_file.read(
        path, METADATA_KEY, device,
        absent=f"{path} does not exist: the finetune stage keeps the weights of the first seed in finetune.seeds; "
               "pick that run's folder, or re-run `dvc repro` for it",
        unreadable=f"{path} is not a readable safetensors file ({{error}}); re-run its finetune stage",
        foreign=f"{path} is not a fine-tuned task model (no {METADATA_KEY} metadata); for a pretrained language "
                "model use `gpt1 generate`")
    try:
        described = json.loads(entry)
        raw_run = described["run"]
        if "variant" in raw_run:  # a model saved while the method's key had its older name
            raw_run["method"] = raw_run.pop("variant")
        spec = TaskSpec.from_dict(raw_run.pop("spec"))
        run = TaskRun(**raw_run, spec=spec)
        task_model = TaskModel(build_model(described["kind"], described["config"]), spec, classifier_dropout=0.0)
        task_model.load_state_dict(tensors)
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as error:
        raise UserError(f"{path} has unreadable task metadata ({type(error).__name__}: {error}); "
                        "re-run its finetune stage") from None
    except RuntimeError as error:  # tensors whose names or shapes its own metadata does not give
        raise UserError(f"{path}: weights do not match their metadata "
                        f"({str(error).splitlines()[-1].strip()}); re-run its finetune stage") from None
    return task_model.to(device).eval(), run
