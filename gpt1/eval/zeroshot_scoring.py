"""Scoring zero-shot candidates with a language model, and each heuristic's accuracy from the scores."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from gpt1.eval.zeroshot_candidates import Candidate, ZeroShotTask


def _fit(candidate: Candidate, max_positions: int) -> tuple[tuple[int, ...], int]:
    """(context + continuation, context length): the context cut from the left so that the model reads at most
    `max_positions` inputs (a continuation longer than that loses its end)."""
    room = max_positions + 1  # the last token is only a target
    continuation = candidate.continuation[: room - 1]
    context = candidate.context[-(room - len(continuation)):]
    return context + continuation, len(context)


@torch.inference_mode()
def score_candidates(model, candidates: Sequence[Candidate], max_positions: int, batch_size: int = 64,
                     device: str | torch.device = "cpu") -> np.ndarray:
    """(N, 2): the summed log-probability of each candidate's continuation tokens and their number.

    Batches of similar length, padded on the right: both models are causal, so padding never reaches a
    real position, and only continuation positions go through the vocabulary projection.
    """
    fitted = [_fit(candidate, max_positions) for candidate in candidates]
    order = sorted(range(len(fitted)), key=lambda i: (len(fitted[i][0]), i))
    result = np.zeros((len(fitted), 2))
    for first in range(0, len(order), batch_size):
        chunk = order[first:first + batch_size]
        width = max(len(fitted[i][0]) for i in chunk) - 1
        inputs = torch.zeros(len(chunk), width, dtype=torch.long)
        targets = torch.zeros(len(chunk), width, dtype=torch.long)
        scored = torch.zeros(len(chunk), width, dtype=torch.bool)
        for row, index in enumerate(chunk):
            ids, context_length = fitted[index]
            inputs[row, :len(ids) - 1] = torch.tensor(ids[:-1])
            targets[row, :len(ids) - 1] = torch.tensor(ids[1:])
            scored[row, context_length - 1:len(ids) - 1] = True  # positions whose target is a continuation token
        hidden = model.hidden_states(inputs.to(device))[scored.to(device)]
        log_probs = F.log_softmax(model.lm_logits(hidden).float(), dim=-1)
        token_scores = log_probs.gather(1, targets[scored].to(device)[:, None])[:, 0].double().cpu()
        rows = scored.nonzero()[:, 0]
        sums = torch.zeros(len(chunk), dtype=torch.float64).index_add_(0, rows, token_scores)
        result[chunk, 0] = sums.numpy()
        result[chunk, 1] = scored.sum(dim=1).numpy()
    return result


def task_candidates(task: ZeroShotTask) -> list[Candidate]:
    """Every candidate the task scores, flattened: each example's, then the unconditional ones."""
    return [candidate for candidates in task.candidates for candidate in candidates] + list(task.unconditional)


def candidate_scores(task: ZeroShotTask, summed: np.ndarray) -> np.ndarray:
    """One score per example candidate (flattened), from score_candidates over task_candidates(task)."""
    scores = summed[:, 0] / summed[:, 1] if task.average else summed[:, 0]
    if not task.unconditional:
        return scores
    baseline = scores[-len(task.unconditional):]
    return scores[:-len(task.unconditional)] - np.tile(baseline, len(task.candidates))


def thresholded_accuracy(task: ZeroShotTask, scores: np.ndarray) -> float:
    """One candidate per example: the round(accept_share x N) best-scored examples are called acceptable
    (label 1); among equal scores the earlier example goes first, so the call never depends on luck."""
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    accepted = set(order[:round(task.accept_share * len(scores))])
    return sum((i in accepted) == bool(label) for i, label in enumerate(task.labels)) / len(task.labels)


def accuracy(task: ZeroShotTask, summed: np.ndarray) -> float:
    """`summed` from score_candidates over task_candidates(task); a tie counts as wrong."""
    scores = candidate_scores(task, summed)
    if task.accept_share is not None:
        return thresholded_accuracy(task, scores)
    right, position = 0, 0
    for candidates, label in zip(task.candidates, task.labels):
        mine = scores[position:position + len(candidates)]
        others = np.delete(mine, label)
        right += bool(mine[label] > others.max())
        position += len(candidates)
    return right / len(task.labels)


def evaluate_many(model, tasks: Sequence[ZeroShotTask], max_positions: int, batch_size: int = 64,
                  device="cpu") -> list[float]:
    """Each task's accuracy; a candidate several tasks share (the exact and PMI sentiment) is scored once."""
    flat = [task_candidates(task) for task in tasks]
    unique = list(dict.fromkeys(candidate for candidates in flat for candidate in candidates))
    summed = score_candidates(model, unique, max_positions, batch_size, device)
    row = {candidate: index for index, candidate in enumerate(unique)}
    return [accuracy(task, summed[[row[c] for c in candidates]]) for task, candidates in zip(tasks, flat)]


def evaluate(model, task: ZeroShotTask, max_positions: int, batch_size: int = 64, device="cpu") -> float:
    return evaluate_many(model, [task], max_positions, batch_size, device)[0]
