"""A fine-tuned model's scores on examples, in input order, and the prediction rows written beside a run's metrics;
the fine-tuning runs (gpt1/train/finetune.py) and `gpt1 predict` both use them."""

from __future__ import annotations

from typing import Sequence

import torch

from gpt1.eval.metrics import DIGITS
from gpt1.model.heads import TaskModel, collate
from gpt1.model.transforms import EncodedExample
from gpt1.train import precision

# Evaluation keeps no activations for a backward pass, so it batches wider than training: fewer, larger
# matrix products (sequences of similar length are batched together, so little of it is padding).
EVAL_BATCH_SIZE = 64


@torch.no_grad()
def predict(task_model: TaskModel, examples: Sequence[EncodedExample], batch_size: int,
            device: torch.device, dtype_setting: str = "float32") -> list[torch.Tensor]:
    """Eval-mode scores for every example, in input order: class/candidate probabilities or values."""
    task_model.eval()
    # Similar lengths together: less padding. Causal models ignore padding, so results do not depend on it.
    order = sorted(range(len(examples)), key=lambda i: (max(len(s) for s in examples[i].sequences), i))
    outputs: list[torch.Tensor | None] = [None] * len(examples)
    for start in range(0, len(order), batch_size):
        indices = order[start:start + batch_size]
        with precision.autocast(device, dtype_setting, many_shapes=True):
            scores, _ = task_model(collate([examples[i] for i in indices], task_model.regression).to(device))
        scores = scores.float() if task_model.regression else torch.softmax(scores.float(), dim=-1)
        scores = scores.cpu()  # one copy to the host per batch: a copy per row waits for the device each time
        for row, index in enumerate(indices):
            outputs[index] = scores[row]
    return outputs


def prediction_rows(outputs: list[torch.Tensor], examples: Sequence[EncodedExample],
                    regression: bool) -> list[dict]:
    rows = []
    for index, (output, example) in enumerate(zip(outputs, examples)):
        if regression:
            rows.append({"index": index, "label": example.label, "prediction": round(output.item(), DIGITS)})
        else:
            probabilities = [round(p, DIGITS) for p in output.tolist()]
            rows.append({"index": index, "label": int(example.label), "prediction": int(output.argmax().item()),
                         "probabilities": probabilities})
    return rows
