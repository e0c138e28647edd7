"""Stage `zeroshot`: the paper's zero-shot heuristics over the pretraining checkpoints (Figure 2, right).

Every log-spaced checkpoint of the Transformer and of the LSTM (plus the final model) is scored on the test
split WITHOUT fine-tuning; each heuristic asks the language model which candidate continuation is more
probable:

- sentiment (`rt_polarity`, the paper's SST-2): append " very" to the review and compare the probability of
  the label words ("negative", "positive") as the next word. A word split into several BPE tokens scores
  the product of its token probabilities (the sum of their log-probabilities).
- acceptability (BIG-bench's Linzen et al. 2016 subject-verb agreement minimal pairs, 499 usable of 500,
  standing for CoLA): the sentence with the higher average token log-probability wins. The paper
  thresholded CoLA's average log-probability; our pairs differ in one verb only, so the pairwise comparison
  is the honest version of that heuristic and needs no threshold fitted on labels.
- multiple choice (`social_iqa`, the paper's RACE): the answer with the highest average token log-probability
  given the context (context + " " + answer; only the answer's tokens are scored).
- Winograd (DPRD) is skipped: none of the files we download holds Winograd-style pronoun data.

Every text starts a new document, as in pretraining: it is preceded by the corpus' document separator
(GPT-1's line-break token). A tie counts as wrong, so an untrained model that scores every candidate alike
gets 0, never a lucky 1. Scores are normalised between chance (0) and our best fine-tuned test accuracy on
the same task (1), as the paper normalised between chance and the state of the art; agreement has no
fine-tuned counterpart in our table and is normalised by a perfect score of 1.0.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from tqdm import tqdm

from gpt1.atomic import atomic_path, atomic_write_text
from gpt1.bpe import END_OF_WORD, Gpt1Bpe
from gpt1.config import Params
from gpt1.errors import UserError
from gpt1.model import load_model
from gpt1.records import ClassificationExample, MultipleChoiceExample, TaskSpec, read_examples
from gpt1.embedded import AGREEMENT_FILE, read_agreement

log = logging.getLogger(__name__)

PRETRAINED_KINDS = ("transformer", "lstm")
MODEL_NAMES = {"transformer": "Transformer", "lstm": "LSTM"}
SENTIMENT_TASK = "rt_polarity"
CHOICE_TASK = "social_iqa"
AGREEMENT_TASK = "agreement"
COLUMNS = ["model", "step", "task", "examples", "score", "chance", "normaliser", "normaliser_source", "normalised"]
_STEP_FILE = re.compile(r"step_(\d+)\.safetensors")


# --- heuristics as candidates: (context, continuation) pairs, one of which is right --------------------


@dataclass(frozen=True)
class Candidate:
    """Token ids: `continuation` is scored given `context` (which itself is never scored)."""

    context: tuple[int, ...]
    continuation: tuple[int, ...]


@dataclass(frozen=True)
class ZeroShotTask:
    name: str
    stands_for: str
    chance: float
    average: bool  # score = mean token log-prob of the continuation (True) or its sum (False)
    candidates: tuple[tuple[Candidate, ...], ...]  # per example, its candidates
    labels: tuple[int, ...]  # per example, the index of the right candidate


def document_start(bpe: Gpt1Bpe) -> tuple[int, ...]:
    """The token pretraining puts between documents, so that each text reads as a new document."""
    separator = bpe.encoder.get("\n" + END_OF_WORD)
    return () if separator is None else (separator,)


def _candidate(context: Sequence[int], continuation: Sequence[int]) -> Candidate:
    if not continuation:
        raise UserError("a zero-shot candidate encodes to no tokens; check the task files for empty texts")
    if not context:  # nothing to condition the first token on: it becomes the context
        context, continuation = continuation[:1], continuation[1:]
    return Candidate(tuple(context), tuple(continuation))


def sentiment_task(examples: Sequence[ClassificationExample], label_words: Sequence[str], bpe: Gpt1Bpe,
                   name: str = SENTIMENT_TASK, stands_for: str = "SST-2") -> ZeroShotTask:
    start = document_start(bpe)
    words = [tuple(bpe.encode(word)) for word in label_words]
    contexts = bpe.encode_many([example.text + " very" for example in examples])
    candidates = tuple(tuple(_candidate(start + tuple(ids), word) for word in words) for ids in contexts)
    return ZeroShotTask(name, stands_for, chance=1 / len(words), average=False, candidates=candidates,
                        labels=tuple(int(example.label) for example in examples))


def choice_task(examples: Sequence[MultipleChoiceExample], bpe: Gpt1Bpe, name: str = CHOICE_TASK,
                stands_for: str = "RACE") -> ZeroShotTask:
    # Encoded apart, so the answer's tokens are exactly its own; GPT-1's BPE splits words at whitespace
    # first, so this equals encoding context + " " + answer in one go.
    start = document_start(bpe)
    contexts = list(bpe.encode_many([example.context for example in examples]))
    answers = iter(bpe.encode_many([choice for example in examples for choice in example.choices]))
    candidates = tuple(tuple(_candidate(start + tuple(context), next(answers)) for _ in example.choices)
                       for context, example in zip(contexts, examples))
    sizes = {len(example.choices) for example in examples}
    if len(sizes) != 1:
        raise UserError(f"{name}: examples have different numbers of choices {sorted(sizes)}; chance is undefined")
    return ZeroShotTask(name, stands_for, chance=1 / sizes.pop(), average=True, candidates=candidates,
                        labels=tuple(example.label for example in examples))




def agreement_task(pairs: Sequence[tuple[str, str]], bpe: Gpt1Bpe) -> ZeroShotTask:
    start = document_start(bpe)
    sentences = iter(bpe.encode_many([sentence for pair in pairs for sentence in pair]))
    candidates = tuple((_candidate(start, next(sentences)), _candidate(start, next(sentences))) for _ in pairs)
    return ZeroShotTask(AGREEMENT_TASK, "CoLA", chance=0.5, average=True, candidates=candidates,
                        labels=(0,) * len(pairs))


def _test_examples(tasks_dir: Path, task: str, limit: int | None) -> tuple[TaskSpec, list]:
    folder = tasks_dir / task
    if not (folder / "task.json").is_file() or not (folder / "test.jsonl").is_file():
        raise UserError(f"{folder} has no task.json/test.jsonl; add {task} to data.tasks and run `gpt1 prepare`")
    spec = TaskSpec.from_file(folder / "task.json")
    return spec, read_examples(folder / "test.jsonl", spec.family)[:limit]


def load_tasks(bpe: Gpt1Bpe, tasks_dir: Path, raw_dir: Path, limit: int | None) -> list[ZeroShotTask]:
    """The three heuristics' tasks, the first `limit` test examples (pairs) of each."""
    spec, examples = _test_examples(tasks_dir, SENTIMENT_TASK, limit)
    if spec.family != "classification" or len(spec.labels) != 2:
        raise UserError(f"{SENTIMENT_TASK}: the 'very' heuristic needs two label words, got {spec.labels}")
    sentiment = sentiment_task(examples, spec.labels, bpe)
    spec, examples = _test_examples(tasks_dir, CHOICE_TASK, limit)
    if spec.family != "multiple_choice":
        raise UserError(f"{CHOICE_TASK}: expected a multiple_choice task, got {spec.family}")
    choice = choice_task(examples, bpe)
    agreement = agreement_task(read_agreement(raw_dir / AGREEMENT_FILE, limit), bpe)
    log.info("zero-shot tasks: %s", ", ".join(f"{t.name} ({len(t.labels)})" for t in (sentiment, agreement, choice)))
    return [sentiment, agreement, choice]


# --- scoring -------------------------------------------------------------------------------------------


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


def accuracy(task: ZeroShotTask, summed: np.ndarray) -> float:
    """`summed` from score_candidates over the task's flattened candidates; a tie counts as wrong."""
    scores = summed[:, 0] / summed[:, 1] if task.average else summed[:, 0]
    right, position = 0, 0
    for candidates, label in zip(task.candidates, task.labels):
        mine = scores[position:position + len(candidates)]
        others = np.delete(mine, label)
        right += bool(mine[label] > others.max())
        position += len(candidates)
    return right / len(task.labels)


def evaluate(model, task: ZeroShotTask, max_positions: int, batch_size: int = 64, device="cpu") -> float:
    flat = [candidate for candidates in task.candidates for candidate in candidates]
    return accuracy(task, score_candidates(model, flat, max_positions, batch_size, device))


# --- checkpoints and normalisation ------------------------------------------------------------------


def find_checkpoints(pretrain_dir: Path, kind: str, final_step: int) -> list[tuple[int, Path]]:
    """(step, path) ascending: every checkpoints/step_<N>.safetensors, and model.safetensors as `final_step`
    unless a checkpoint at or past that step already stands for it."""
    folder = pretrain_dir / kind
    found = {int(match.group(1)): path for path in (folder / "checkpoints").glob("step_*.safetensors")
             if (match := _STEP_FILE.fullmatch(path.name))}
    final = folder / "model.safetensors"
    if final.is_file() and max(found, default=-1) < final_step:
        found[final_step] = final
    if not found:
        raise UserError(f"no {kind} checkpoints in {folder} (checkpoints/step_<N>.safetensors or model.safetensors); "
                        "run `gpt1 pretrain` first")
    return sorted(found.items())


def best_finetuned(scores_csv: Path | None, task: str) -> tuple[float, str] | None:
    """(best over variants of the mean over seeds of the test accuracy, its variant), or None if absent."""
    if scores_csv is None or not Path(scores_csv).is_file():
        return None
    table = pd.read_csv(scores_csv)
    missing = {"task", "variant", "seed", "metric", "value"} - set(table.columns)
    if missing:
        raise UserError(f"{scores_csv} lacks the column(s) {sorted(missing)}; re-run `gpt1 evaluate`")
    rows = table[(table["task"] == task) & (table["metric"] == "accuracy")]
    if "split" in rows.columns:
        rows = rows[rows["split"] == "test"]
    if rows.empty:
        return None
    means = rows.groupby("variant")["value"].mean().sort_index()
    return float(means.max()), str(means.idxmax())


def normaliser_for(task: ZeroShotTask, scores_csv: Path | None) -> tuple[float, str]:
    """(the score that counts as 1, where it comes from)."""
    if task.name == AGREEMENT_TASK:
        return 1.0, "perfect (no fine-tuned agreement task in our table)"
    best = best_finetuned(scores_csv, task.name)
    if best is None:
        return 1.0, f"perfect (no fine-tuned {task.name} accuracy: {scores_csv} missing or without it)"
    value, variant = best
    if value <= task.chance:
        return 1.0, f"perfect (best fine-tuned {value:.4f} is not above chance)"
    return value, f"best fine-tuned test accuracy ({variant}, mean over seeds)"


def normalise(score: float, chance: float, normaliser: float) -> float:
    """0 at chance, 1 at the normaliser (may leave [0, 1]: below chance, or above the fine-tuned model)."""
    return (score - chance) / (normaliser - chance)


# --- the stage ---------------------------------------------------------------------------------------


def _device(choice: str) -> str:
    return "cuda" if choice == "auto" and torch.cuda.is_available() else ("cpu" if choice == "auto" else choice)


def evaluate_checkpoints(tasks: list[ZeroShotTask], checkpoints: dict[str, list[tuple[int, Path]]],
                         max_positions: int, device: str, batch_size: int = 64) -> list[dict]:
    rows = []
    jobs = [(kind, step, path) for kind, found in checkpoints.items() for step, path in found]
    for kind, step, path in tqdm(jobs, desc="zero-shot", unit="checkpoint", disable=None):
        model = load_model(path, device)
        # The LSTM has no position limit; cut its inputs as the Transformer's, so both see the same text.
        limit = min(max_positions, getattr(model.config, "n_positions", max_positions))
        for task in tasks:
            score = evaluate(model, task, limit, batch_size, device)
            rows.append({"model": kind, "step": step, "task": task.name, "examples": len(task.labels),
                         "score": score, "chance": task.chance})
            log.info("%s step %d %s: %.4f", kind, step, task.name, score)
    return rows


def write_table(rows: list[dict], tasks: list[ZeroShotTask], scores_csv: Path | None, out_csv: Path) -> pd.DataFrame:
    normalisers = {task.name: normaliser_for(task, scores_csv) for task in tasks}
    table = pd.DataFrame(rows)
    table["normaliser"] = table["task"].map(lambda name: normalisers[name][0])
    table["normaliser_source"] = table["task"].map(lambda name: normalisers[name][1])
    table["normalised"] = [normalise(s, c, n) for s, c, n in zip(table["score"], table["chance"], table["normaliser"])]
    table = table[COLUMNS]
    atomic_write_text(out_csv, table.to_csv(index=False, float_format="%.6f", lineterminator="\n"))
    return table


def plot(table: pd.DataFrame, tasks: list[ZeroShotTask], out_png: Path) -> None:
    """Figure 2 (right): normalised zero-shot performance vs pretraining updates, Transformer solid, LSTM dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6.4, 4.4), dpi=100)
    colours = dict(zip([task.name for task in tasks], plt.rcParams["axes.prop_cycle"].by_key()["color"]))
    stands_for = {task.name: task.stands_for for task in tasks}
    shown = table[table["step"] > 0]  # a log axis has no room for step 0
    for (kind, task), rows in shown.groupby(["model", "task"], sort=False):
        axes.plot(rows["step"], rows["normalised"], color=colours[task], marker="o", markersize=3,
                  linestyle="-" if kind == "transformer" else "--",
                  label=f"{task} ({stands_for[task]}), {MODEL_NAMES.get(kind, kind)}")
    axes.set_xscale("log")
    axes.axhline(0.0, color="grey", linewidth=0.5)
    axes.set_xlabel("pretraining updates")
    axes.set_ylabel("normalised zero-shot performance\n(0 = chance, 1 = best fine-tuned; agreement: 1 = perfect)")
    axes.set_title("Zero-shot heuristics: Transformer (solid) vs LSTM (dashed)")
    axes.legend(fontsize=7)
    figure.tight_layout()
    with atomic_path(out_png) as temporary:
        figure.savefig(temporary, format="png", metadata={"Software": None})
    plt.close(figure)


def run(params: Params, tasks_dir: Path = Path("data/tasks"), raw_dir: Path = Path("data/raw"),
        bpe_dir: Path = Path("data/bpe"), pretrain_dir: Path = Path("data/pretrain"),
        out_csv: Path = Path("results/zero_shot.csv"), out_png: Path = Path("results/zero_shot.png"),
        finetuned_scores: Path | None = Path("results/scores.csv"), kinds: Sequence[str] = PRETRAINED_KINDS,
        batch_size: int = 64) -> pd.DataFrame:
    bpe = Gpt1Bpe.load(bpe_dir)
    tasks = load_tasks(bpe, tasks_dir, raw_dir, params.finetune.max_eval_examples)
    checkpoints = {kind: find_checkpoints(pretrain_dir, kind, params.pretrain.max_steps) for kind in kinds}
    rows = evaluate_checkpoints(tasks, checkpoints, params.model.n_positions, _device(params.finetune.device),
                                batch_size)
    table = write_table(rows, tasks, finetuned_scores, out_csv)
    plot(table, tasks, out_png)
    log.info("wrote %s and %s", out_csv, out_png)
    return table
