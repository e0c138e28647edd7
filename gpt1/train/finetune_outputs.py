"""A fine-tuning run's evaluation and files: its model's predictions and scores on dev and test, and its folder
(predictions, metrics, model card, weights), written whole or not at all."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from gpt1.data.records import TaskSpec
from gpt1.errors import UserError
from gpt1.eval.metrics import score
from gpt1.files.atomic import atomic_directory
from gpt1.layout import RUN_CARD, RUN_METRICS, RUN_WEIGHTS, run_predictions
from gpt1.model.heads import TaskModel
from gpt1.model.task_checkpoint import TaskRun, save_task_model
from gpt1.model.transforms import EncodedExample
from gpt1.params.schema import FinetuneParams
from gpt1.train.finetune_predict import EVAL_BATCH_SIZE, predict, prediction_rows


def evaluate(task_model: TaskModel, encoded: dict[str, list[EncodedExample]], spec: TaskSpec,
             settings: FinetuneParams, device: torch.device):
    """Predictions and scores on dev and test: ({split: {"metrics", "notes"}}, {split: rows})."""
    results, predictions = {}, {}
    for split in ("dev", "test"):
        outputs = predict(task_model, encoded[split], max(settings.batch_size, EVAL_BATCH_SIZE), device,
                          settings.dtype)
        predictions[split] = prediction_rows(outputs, encoded[split], task_model.regression)
        scored = score(spec, [row["label"] for row in predictions[split]],
                       [row["prediction"] for row in predictions[split]])
        results[split] = {"metrics": scored.values, "notes": list(scored.notes)}
    return results, predictions


def write_run(out_dir: Path, predictions: dict[str, list[dict]], metrics: dict, card: str,
              weights: tuple[TaskModel, TaskRun] | None) -> None:
    """The run's folder, whole or not at all (an interrupted multi-seed run leaves complete seeds only)."""
    with atomic_directory(out_dir) as staging:
        for split, rows in predictions.items():
            (staging / run_predictions(split)).write_text("".join(strict_json(r) + "\n" for r in rows))
        (staging / RUN_METRICS).write_text(strict_json(metrics, indent=2, sort_keys=True) + "\n")
        (staging / RUN_CARD).write_text(card)
        if weights is not None:
            save_task_model(*weights, staging / RUN_WEIGHTS)


def strict_json(value, **options) -> str:
    """JSON as the standard has it: a NaN or infinity (a model that broke in evaluation) stops the run instead of
    writing a bare NaN that no JSON reader accepts."""
    try:
        return json.dumps(value, allow_nan=False, **options)
    except ValueError:
        raise UserError("a prediction or metric is not a finite number (the model's outputs overflowed); nothing "
                        "was written for this run: lower finetune.lr or use finetune.dtype float32") from None
