"""The paper's zero-shot heuristics as candidate sets: which continuation does the language model prefer?

Each selected task whose registry entry names a heuristic (`TaskDefinition.zero_shot`) is read from its
test split, so any profile gets the heuristics of its own tasks:

- "sentiment" (SST-2; `rt_polarity` in the default): append " very" to the review and compare the
  probability of the label words ("negative", "positive") as the next word. A word split into several BPE
  tokens scores the product of its token probabilities (the sum of their log-probabilities). Next to it,
  the calibrated version (`<task>_pmi`): each label word's log-probability minus its log-probability after
  " very" alone (domain-conditional PMI, Holtzman et al. 2021, "Surface Form Competition"), so a model that
  simply prefers one label word everywhere gains nothing from it.
- "acceptability" (CoLA): the paper thresholds the average token log-probability. The threshold is set
  without fitting labels: the test sentences whose average log-probability is highest are called
  acceptable, as many as the training split's share of acceptable sentences. Chance is the accuracy of a
  random guess with that share.
- "choice" (RACE, Story Cloze; `social_iqa` in the default): the answer with the highest average token
  log-probability given the context (context + " " + answer; only the answer's tokens are scored).
- BIG-bench's subject-verb agreement minimal pairs (Linzen et al. 2016; 499 usable of 500), when `gpt1
  download` fetched them (the default profile does): an acceptability probe that needs no threshold, the
  sentence with the higher average token log-probability wins (`agreement`), and, as minimal-pair
  benchmarks score them, the one with the higher total log-probability (`agreement_total`).
- Winograd (DPRD) is skipped: no registered task holds Winograd-style pronoun data.

Every text starts a new document, as in pretraining: it is preceded by the corpus' document separator
(GPT-1's line-break token).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Sequence

from gpt1.tokenizer.bpe import Gpt1Bpe
from gpt1.data.packaged import AGREEMENT_FILE, read_agreement
from gpt1.errors import UserError
from gpt1.data.records import ClassificationExample, MultipleChoiceExample, TaskSpec, read_examples
from gpt1.data.registry import TASKS
from gpt1.eval.zeroshot_candidates import Candidate, ZeroShotTask
from gpt1.data.task_data import seeded_subset
from gpt1.layout import prepared_task, split_file, task_spec

log = logging.getLogger(__name__)

AGREEMENT_TASK = "agreement"
PMI_SUFFIX = "_pmi"
TOTAL_SUFFIX = "_total"
# Panels and rows follow this order, then data.tasks' order within a heuristic.
HEURISTICS = ("sentiment", "acceptability", "choice")
PAPER_TASK_OF = {"sentiment": "SST-2", "acceptability": "CoLA", "choice": "RACE"}  # whose heuristic, in the paper
ACCEPTABLE = 1  # CoLA's own coding: label 1 is "acceptable"


def _candidate(context: Sequence[int], continuation: Sequence[int]) -> Candidate:
    if not continuation:
        raise UserError("a zero-shot candidate encodes to no tokens; check the task files for empty texts")
    if not context:  # nothing to condition the first token on: it becomes the context
        context, continuation = continuation[:1], continuation[1:]
    return Candidate(tuple(context), tuple(continuation))


def sentiment_task(examples: Sequence[ClassificationExample], label_words: Sequence[str], bpe: Gpt1Bpe,
                   name: str = "sentiment", stands_for: str = "SST-2", calibrated: bool = False,
                   contexts: Sequence[Sequence[int]] | None = None) -> ZeroShotTask:
    """The " very" heuristic; `calibrated` subtracts log P(word | " very") to undo a model's prior for one word.
    `contexts`: the reviews + " very" already encoded (the exact and the calibrated task share them)."""
    start = bpe.document_start()
    words = [tuple(bpe.encode(word)) for word in label_words]
    if contexts is None:
        contexts = list(bpe.encode_many([example.text + " very" for example in examples]))
    candidates = tuple(tuple(_candidate(start + tuple(ids), word) for word in words) for ids in contexts)
    # The same few candidates for every example, so they are scored once, not once per review.
    very = start + tuple(bpe.encode("very"))
    unconditional = tuple(_candidate(very, word) for word in words) if calibrated else ()
    if calibrated:
        name, stands_for = name + PMI_SUFFIX, stands_for + ", PMI"
    return ZeroShotTask(name, stands_for, chance=1 / len(words), average=False, candidates=candidates,
                        labels=tuple(int(example.label) for example in examples), unconditional=unconditional)


def choice_task(examples: Sequence[MultipleChoiceExample], bpe: Gpt1Bpe, name: str = "choice",
                stands_for: str = "RACE") -> ZeroShotTask:
    if not examples:
        raise UserError(f"{name}: no test examples to score; check {split_file(name, 'test')}")
    # Encoded apart, so the answer's tokens are exactly its own; GPT-1's BPE splits words at whitespace
    # first, so this equals encoding context + " " + answer in one go.
    start = bpe.document_start()
    contexts = list(bpe.encode_many([example.context for example in examples]))
    answers = iter(bpe.encode_many([choice for example in examples for choice in example.choices]))
    candidates = tuple(tuple(_candidate(start + tuple(context), next(answers)) for _ in example.choices)
                       for context, example in zip(contexts, examples))
    # Expected accuracy of a uniform guess; rows may differ in their number of candidates (a few of
    # BIG-bench's social_iqa rows have two), so chance is the mean of 1/k, not 1/k of the first row.
    chance = sum(1 / len(example.choices) for example in examples) / len(examples)
    return ZeroShotTask(name, stands_for, chance=chance, average=True, candidates=candidates,
                        labels=tuple(example.label for example in examples))


def acceptability_task(examples: Sequence[ClassificationExample], train_share: float, bpe: Gpt1Bpe,
                       name: str = "acceptability", stands_for: str = "CoLA") -> ZeroShotTask:
    """CoLA's heuristic: average token log-probability, the top `train_share` of sentences called acceptable."""
    if not examples:
        raise UserError(f"{name}: no test examples to score; check {split_file(name, 'test')}")
    start = bpe.document_start()
    sentences = bpe.encode_many([example.text for example in examples])
    labels = tuple(int(int(example.label) == ACCEPTABLE) for example in examples)
    test_share = sum(labels) / len(labels)
    chance = train_share * test_share + (1 - train_share) * (1 - test_share)
    return ZeroShotTask(name, stands_for, chance=chance, average=True,
                        candidates=tuple((_candidate(start, ids),) for ids in sentences), labels=labels,
                        accept_share=train_share)


def agreement_task(pairs: Sequence[tuple[str, str]], bpe: Gpt1Bpe, total: bool = False) -> ZeroShotTask:
    """The grammatical sentence must score higher: by average token log-probability (the paper's
    acceptability score), or with `total` by the sentence's log-probability, as minimal-pair benchmarks
    (Linzen et al. 2016, BLiMP) compare them. The two verb forms often differ in token count ("compares"
    may be two tokens where "compare" is one), and a well-predicted suffix token raises an average, so
    averaging favours the longer form more as the model improves; the total has no such pull."""
    start = bpe.document_start()
    sentences = iter(bpe.encode_many([sentence for pair in pairs for sentence in pair]))
    candidates = tuple((_candidate(start, next(sentences)), _candidate(start, next(sentences))) for _ in pairs)
    return ZeroShotTask(AGREEMENT_TASK + (TOTAL_SUFFIX if total else ""), "CoLA" + (", total" if total else ""),
                        chance=0.5, average=not total, candidates=candidates, labels=(0,) * len(pairs))


# --- the selected tasks -> their heuristics ---------------------------------------------------------------


def _split(tasks_dir: Path, task: str, split: str, limit: int | None, seed: int) -> tuple[TaskSpec, list]:
    spec_file, examples_file = task_spec(task, tasks_dir), split_file(task, split, tasks_dir)
    if not spec_file.is_file() or not examples_file.is_file():
        raise UserError(f"{prepared_task(task, tasks_dir)} has no {spec_file.name}/{examples_file.name}; run "
                        "`gpt1 prepare` for data.tasks")
    spec = TaskSpec.from_file(spec_file)
    # The same test rows as fine-tuning evaluates (a seeded sample), so the two can be compared.
    return spec, seeded_subset(read_examples(examples_file, spec.family), limit, seed, task, split)


def _heuristic_tasks(heuristic: str, task: str, bpe: Gpt1Bpe, tasks_dir: Path, limit: int | None,
                     seed: int) -> list[ZeroShotTask]:
    spec, examples = _split(tasks_dir, task, "test", limit, seed)
    stands_for = PAPER_TASK_OF[heuristic]
    if heuristic == "choice":
        return [choice_task(examples, bpe, task, stands_for)]
    if spec.family != "classification" or len(spec.labels) != 2:
        raise UserError(f"{task}: the {heuristic} heuristic needs a two-label classification task, "
                        f"got {spec.family} with labels {list(spec.labels)}")
    if heuristic == "sentiment":
        contexts = list(bpe.encode_many([example.text + " very" for example in examples]))
        return [sentiment_task(examples, spec.labels, bpe, task, stands_for, calibrated, contexts)
                for calibrated in (False, True)]
    _, train = _split(tasks_dir, task, "train", None, seed)
    share = sum(int(example.label) == ACCEPTABLE for example in train) / max(1, len(train))
    return [acceptability_task(examples, share, bpe, task, stands_for)]


def load_tasks(bpe: Gpt1Bpe, tasks_dir: Path, raw_dir: Path, task_names: Sequence[str], limit: int | None,
               seed: int) -> list[ZeroShotTask]:
    """The heuristics of the selected tasks, on at most `limit` test examples each (the rows fine-tuning
    evaluates), plus the agreement pairs (the first `limit`) where `gpt1 download` fetched them."""
    # A user's own task (params' data.user_tasks) is not in the registry and has no heuristic.
    selected = {heuristic: [name for name in task_names if name in TASKS and TASKS[name].zero_shot == heuristic]
                for heuristic in HEURISTICS}
    tasks = []
    for heuristic in HEURISTICS:
        for name in selected[heuristic]:
            tasks += _heuristic_tasks(heuristic, name, bpe, tasks_dir, limit, seed)
        if heuristic == "acceptability":
            if (raw_dir / AGREEMENT_FILE).is_file():
                pairs = read_agreement(raw_dir / AGREEMENT_FILE, limit)
                tasks += [agreement_task(pairs, bpe), agreement_task(pairs, bpe, total=True)]
            else:
                log.info("zero-shot: no agreement pairs (%s), that probe is skipped", raw_dir / AGREEMENT_FILE)
    log.info("zero-shot tasks: %s", ", ".join(f"{t.name} ({len(t.labels)})" for t in tasks))
    return tasks
