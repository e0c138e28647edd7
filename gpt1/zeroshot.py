"""Stage `zeroshot`: the paper's zero-shot heuristics over the pretraining checkpoints (Figure 2, right).

Every log-spaced checkpoint of the Transformer and of the LSTM (plus the final model) is scored on the test
split WITHOUT fine-tuning; each heuristic asks the language model which candidate continuation is more
probable:

- sentiment (`rt_polarity`, the paper's SST-2): append " very" to the review and compare the probability of
  the label words ("negative", "positive") as the next word. A word split into several BPE tokens scores
  the product of its token probabilities (the sum of their log-probabilities).
- calibrated sentiment (`rt_polarity_pmi`): the same, but each label word's log-probability minus its
  log-probability after " very" alone (domain-conditional PMI, Holtzman et al. 2021, "Surface Form
  Competition"), so a model that simply prefers one label word everywhere gains nothing from it.
- acceptability (BIG-bench's Linzen et al. 2016 subject-verb agreement minimal pairs, 499 usable of 500,
  standing for CoLA): the sentence with the higher average token log-probability wins. The paper
  thresholded CoLA's average log-probability; our pairs differ in one verb only, so the pairwise comparison
  is the honest version of that heuristic and needs no threshold fitted on labels.
- multiple choice (`social_iqa`, the paper's RACE): the answer with the highest average token log-probability
  given the context (context + " " + answer; only the answer's tokens are scored).
- Winograd (DPRD) is skipped: none of the files we download holds Winograd-style pronoun data.
A heuristic whose task is absent (not in data.tasks) is skipped with a warning.

Every text starts a new document, as in pretraining: it is preceded by the corpus' document separator
(GPT-1's line-break token). A tie counts as wrong, so an untrained model that scores every candidate alike
gets 0, never a lucky 1.

The figure plots RAW test accuracy, one panel per heuristic, with its chance level dashed and a 95 %
binomial band, because a reader can judge "above chance, and by more than the noise" at a glance. The paper
normalised between chance and the state of the art; we first normalised by our best fine-tuned score, but at
our scale that score is barely above chance, so the ratio swung past 1 and below -0.9 and meant nothing.
Whether a heuristic rises over pretraining is decided, not eyeballed: results/zero_shot_trend.csv compares
the last checkpoint with the first (a z-test on the two binomial accuracies) and asks for a monotone trend
(Spearman's rho with the step).
"""

from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from scipy.stats import spearmanr
from tqdm import tqdm

from gpt1.atomic import atomic_path, atomic_write_text
from gpt1.bpe import END_OF_WORD, Gpt1Bpe
from gpt1.config import Params
from gpt1.errors import UserError
from gpt1.model import load_model
from gpt1.task_data import seeded_subset
from gpt1.records import ClassificationExample, MultipleChoiceExample, TaskSpec, read_examples
from gpt1.embedded import AGREEMENT_FILE, read_agreement

log = logging.getLogger(__name__)

PRETRAINED_KINDS = ("transformer", "lstm")
MODEL_NAMES = {"transformer": "Transformer", "lstm": "LSTM"}
SENTIMENT_TASK = "rt_polarity"
CHOICE_TASK = "social_iqa"
AGREEMENT_TASK = "agreement"
PMI_SUFFIX = "_pmi"
COLUMNS = ["model", "step", "task", "examples", "score", "chance", "se"]
TREND_COLUMNS = ["model", "task", "first_step", "last_step", "first", "last", "difference", "se", "z", "spearman",
                 "rises"]
Z_95 = 1.96
MIN_SPEARMAN = 0.7  # a rise must also be a trend, not one lucky last checkpoint
PANEL_INCHES = (3.0, 3.2)  # (width, height) of one heuristic's panel
DPI = 100
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
    # Per candidate index, a context-free version whose score is subtracted from every example's (PMI).
    unconditional: tuple[Candidate, ...] = ()


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
                   name: str = SENTIMENT_TASK, stands_for: str = "SST-2", calibrated: bool = False) -> ZeroShotTask:
    """The " very" heuristic; `calibrated` subtracts log P(word | " very") to undo a model's prior for one word."""
    start = document_start(bpe)
    words = [tuple(bpe.encode(word)) for word in label_words]
    contexts = bpe.encode_many([example.text + " very" for example in examples])
    candidates = tuple(tuple(_candidate(start + tuple(ids), word) for word in words) for ids in contexts)
    # The same few candidates for every example, so they are scored once, not once per review.
    very = start + tuple(bpe.encode("very"))
    unconditional = tuple(_candidate(very, word) for word in words) if calibrated else ()
    if calibrated:
        name, stands_for = name + PMI_SUFFIX, stands_for + ", PMI"
    return ZeroShotTask(name, stands_for, chance=1 / len(words), average=False, candidates=candidates,
                        labels=tuple(int(example.label) for example in examples), unconditional=unconditional)


def choice_task(examples: Sequence[MultipleChoiceExample], bpe: Gpt1Bpe, name: str = CHOICE_TASK,
                stands_for: str = "RACE") -> ZeroShotTask:
    # Encoded apart, so the answer's tokens are exactly its own; GPT-1's BPE splits words at whitespace
    # first, so this equals encoding context + " " + answer in one go.
    start = document_start(bpe)
    contexts = list(bpe.encode_many([example.context for example in examples]))
    answers = iter(bpe.encode_many([choice for example in examples for choice in example.choices]))
    candidates = tuple(tuple(_candidate(start + tuple(context), next(answers)) for _ in example.choices)
                       for context, example in zip(contexts, examples))
    if not examples:
        raise UserError(f"{name}: no test examples to score")
    # Expected accuracy of a uniform guess; rows may differ in their number of candidates (a few of
    # BIG-bench's social_iqa rows have two), so chance is the mean of 1/k, not 1/k of the first row.
    chance = sum(1 / len(example.choices) for example in examples) / len(examples)
    return ZeroShotTask(name, stands_for, chance=chance, average=True, candidates=candidates,
                        labels=tuple(example.label for example in examples))




def agreement_task(pairs: Sequence[tuple[str, str]], bpe: Gpt1Bpe) -> ZeroShotTask:
    start = document_start(bpe)
    sentences = iter(bpe.encode_many([sentence for pair in pairs for sentence in pair]))
    candidates = tuple((_candidate(start, next(sentences)), _candidate(start, next(sentences))) for _ in pairs)
    return ZeroShotTask(AGREEMENT_TASK, "CoLA", chance=0.5, average=True, candidates=candidates,
                        labels=(0,) * len(pairs))


def _test_examples(tasks_dir: Path, task: str, limit: int | None, seed: int) -> tuple[TaskSpec, list]:
    folder = tasks_dir / task
    if not (folder / "task.json").is_file() or not (folder / "test.jsonl").is_file():
        raise UserError(f"{folder} has no task.json/test.jsonl; add {task} to data.tasks and run `gpt1 prepare`")
    spec = TaskSpec.from_file(folder / "task.json")
    # The same test rows as fine-tuning evaluates (a seeded sample), so the two can be compared.
    return spec, seeded_subset(read_examples(folder / "test.jsonl", spec.family), limit, seed, task, "test")


def _sentiment_tasks(bpe: Gpt1Bpe, tasks_dir: Path, limit: int | None, seed: int) -> list[ZeroShotTask]:
    spec, examples = _test_examples(tasks_dir, SENTIMENT_TASK, limit, seed)
    if spec.family != "classification" or len(spec.labels) != 2:
        raise UserError(f"{SENTIMENT_TASK}: the 'very' heuristic needs two label words, got {spec.labels}")
    return [sentiment_task(examples, spec.labels, bpe, calibrated=calibrated) for calibrated in (False, True)]


def _choice_tasks(bpe: Gpt1Bpe, tasks_dir: Path, limit: int | None, seed: int) -> list[ZeroShotTask]:
    spec, examples = _test_examples(tasks_dir, CHOICE_TASK, limit, seed)
    if spec.family != "multiple_choice":
        raise UserError(f"{CHOICE_TASK}: expected a multiple_choice task, got {spec.family}")
    return [choice_task(examples, bpe)]


def load_tasks(bpe: Gpt1Bpe, tasks_dir: Path, raw_dir: Path, limit: int | None, seed: int = 0) -> list[ZeroShotTask]:
    """The heuristics' tasks on at most `limit` test examples each (the rows fine-tuning evaluates; the first
    `limit` agreement pairs). A heuristic whose data is absent
    is skipped with a warning, so that a profile without, say, rt_polarity still runs the others."""
    sources: list[tuple[str, Path, Callable[[], list[ZeroShotTask]]]] = [
        (SENTIMENT_TASK, tasks_dir / SENTIMENT_TASK / "task.json", lambda: _sentiment_tasks(bpe, tasks_dir, limit, seed)),
        (AGREEMENT_TASK, raw_dir / AGREEMENT_FILE,
         lambda: [agreement_task(read_agreement(raw_dir / AGREEMENT_FILE, limit), bpe)]),
        (CHOICE_TASK, tasks_dir / CHOICE_TASK / "task.json", lambda: _choice_tasks(bpe, tasks_dir, limit, seed)),
    ]
    tasks = []
    for name, needed, load in sources:
        if needed.is_file():
            tasks += load()
        else:
            log.warning("zero-shot: skipping the %s heuristic, %s is missing", name, needed)
    if not tasks:
        raise UserError(f"no zero-shot heuristic has its data: add {SENTIMENT_TASK} or {CHOICE_TASK} to data.tasks "
                        "and run `gpt1 prepare`, or run `gpt1 download` for the agreement pairs")
    log.info("zero-shot tasks: %s", ", ".join(f"{t.name} ({len(t.labels)})" for t in tasks))
    return tasks


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


def accuracy(task: ZeroShotTask, summed: np.ndarray) -> float:
    """`summed` from score_candidates over task_candidates(task); a tie counts as wrong."""
    scores = candidate_scores(task, summed)
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


# --- checkpoints -----------------------------------------------------------------------------------------


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


# --- the stage ---------------------------------------------------------------------------------------


def _device(choice: str) -> str:
    return "cuda" if choice == "auto" and torch.cuda.is_available() else ("cpu" if choice == "auto" else choice)


def standard_error(accuracy: float | np.ndarray, examples: int | np.ndarray):
    """The binomial standard error of an accuracy over `examples` independent examples."""
    return np.sqrt(accuracy * (1 - accuracy) / examples)


def evaluate_checkpoints(tasks: list[ZeroShotTask], checkpoints: dict[str, list[tuple[int, Path]]],
                         max_positions: int, device: str, batch_size: int = 64) -> pd.DataFrame:
    rows = []
    jobs = [(kind, step, path) for kind, found in checkpoints.items() for step, path in found]
    for kind, step, path in tqdm(jobs, desc="zero-shot", unit="checkpoint", disable=None):
        model = load_model(path, device)
        # The LSTM has no position limit; cut its inputs as the Transformer's, so both see the same text.
        limit = min(max_positions, getattr(model.config, "n_positions", max_positions))
        for task, score in zip(tasks, evaluate_many(model, tasks, limit, batch_size, device)):
            rows.append({"model": kind, "step": step, "task": task.name, "examples": len(task.labels),
                         "score": score, "chance": task.chance})
            log.info("%s step %d %s: %.4f", kind, step, task.name, score)
    table = pd.DataFrame(rows)
    table["se"] = standard_error(table["score"], table["examples"])
    return table[COLUMNS]


def trend_row(rows: pd.DataFrame) -> dict:
    """Does one (model, heuristic) rise over pretraining? Last minus first checkpoint beyond 1.96 standard
    errors (their binomial errors, independent), and a monotone trend over all checkpoints (Spearman)."""
    rows = rows.sort_values("step")
    first, last = rows.iloc[0], rows.iloc[-1]
    difference = float(last["score"] - first["score"])
    se = math.hypot(first["se"], last["se"])
    z = difference / se if se > 0 else (math.copysign(math.inf, difference) if difference else 0.0)
    # Undefined (NaN) for one checkpoint or a flat curve: then nothing rises.
    spearman = float(spearmanr(rows["step"], rows["score"])[0]) if rows["score"].nunique() > 1 else math.nan
    return {"first_step": int(first["step"]), "last_step": int(last["step"]), "first": float(first["score"]),
            "last": float(last["score"]), "difference": difference, "se": se, "z": z, "spearman": spearman,
            "rises": bool(difference > Z_95 * se and spearman >= MIN_SPEARMAN)}


def trend(table: pd.DataFrame) -> pd.DataFrame:
    """One row per (model, heuristic) of the score table: see trend_row."""
    rows = [{"model": model, "task": task, **trend_row(group)}
            for (model, task), group in table.groupby(["model", "task"], sort=False)]
    result = pd.DataFrame(rows, columns=TREND_COLUMNS)
    for row in result.itertuples():
        log.info("%s %s: %.4f (step %d) -> %.4f (step %d), %+.4f +- %.4f, z %.2f, Spearman %.2f: %s",
                 row.model, row.task, row.first, row.first_step, row.last, row.last_step, row.difference, row.se,
                 row.z, row.spearman, "rises" if row.rises else "does not rise")
    return result


def _write_csv(table: pd.DataFrame, path: Path) -> None:
    atomic_write_text(path, table.to_csv(index=False, float_format="%.6f", lineterminator="\n"))


def plot(table: pd.DataFrame, tasks: list[ZeroShotTask], out_png: Path) -> None:
    """Figure 2 (right): raw accuracy vs pretraining updates, one panel per heuristic, Transformer solid and
    LSTM dashed, each with its 95 % binomial band, chance as a grey dashed line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    width, height = PANEL_INCHES
    figure, axes = plt.subplots(1, len(tasks), figsize=(width * len(tasks), height), dpi=DPI, squeeze=False)
    colours = dict(zip(PRETRAINED_KINDS, plt.rcParams["axes.prop_cycle"].by_key()["color"]))
    shown = table[table["step"] > 0]  # a log axis has no room for step 0
    for axis, task in zip(axes[0], tasks):
        for kind, rows in shown[shown["task"] == task.name].groupby("model", sort=False):
            rows = rows.sort_values("step")
            low, high = (rows["score"] - Z_95 * rows["se"]).clip(0, 1), (rows["score"] + Z_95 * rows["se"]).clip(0, 1)
            colour = colours.get(kind)
            axis.fill_between(rows["step"], 100 * low, 100 * high, color=colour, alpha=0.15, linewidth=0)
            axis.plot(rows["step"], 100 * rows["score"], color=colour, marker="o", markersize=3,
                      linestyle="-" if kind == "transformer" else "--", label=MODEL_NAMES.get(kind, kind))
        axis.axhline(100 * task.chance, color="grey", linestyle="--", linewidth=0.8, label="chance")
        axis.set_xscale("log")
        axis.set_title(f"{task.name}\n({task.stands_for})", fontsize=9)
        axis.set_xlabel("pretraining updates")
    axes[0, 0].set_ylabel("zero-shot test accuracy (%)")
    axes[0, 0].legend(fontsize=7)
    figure.tight_layout()
    with atomic_path(out_png) as temporary:
        figure.savefig(temporary, format="png", metadata={"Software": None})
    plt.close(figure)


def run(params: Params, tasks_dir: Path = Path("data/tasks"), raw_dir: Path = Path("data/raw"),
        bpe_dir: Path = Path("data/bpe"), pretrain_dir: Path = Path("data/pretrain"),
        out_csv: Path = Path("results/zero_shot.csv"), out_png: Path = Path("results/zero_shot.png"),
        out_trend: Path = Path("results/zero_shot_trend.csv"), kinds: Sequence[str] = PRETRAINED_KINDS,
        batch_size: int = 64) -> pd.DataFrame:
    bpe = Gpt1Bpe.load(bpe_dir)
    tasks = load_tasks(bpe, tasks_dir, raw_dir, params.finetune.max_eval_examples, params.seed)
    checkpoints = {kind: find_checkpoints(pretrain_dir, kind, params.pretrain.max_steps) for kind in kinds}
    table = evaluate_checkpoints(tasks, checkpoints, params.model.n_positions, _device(params.finetune.device),
                                 batch_size)
    _write_csv(table, out_csv)
    _write_csv(trend(table), out_trend)
    plot(table, tasks, out_png)
    log.info("wrote %s, %s and %s", out_csv, out_trend, out_png)
    return table
