"""Data preparation: tasks -> fixed splits; corpus -> cleaned, deduplicated, decontaminated train/val (for the
`prepare` stage).

Decontamination: every sentence (of at least `text.MIN_KEY_WORDS` words) of every selected task's dev
and test split, and of the zero-shot agreement pairs, is removed from the pretraining corpus, so
pretraining never sees an evaluation sentence.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import logging
import random
from collections import Counter
from pathlib import Path
from typing import Iterable, Iterator

from tqdm import tqdm

from gpt1.data import packaged, registry
from gpt1.files.atomic import atomic_directory, atomic_write_text
from gpt1.data.records import Example, texts_of, write_examples
from gpt1.data.tasks import TaskDefinition, drop_duplicates, majority_rate, make_splits
from gpt1.data.user_tasks import user_corpus_part, user_task
from gpt1.layout import split_file, split_jsonl, task_spec, task_stats
from gpt1.data.cleanup import clean, repair, sentence_key, sentences
from gpt1.data.fingerprints import FINGERPRINT_BYTES, FingerprintSet
from gpt1.files.parallel import Workers, shared

log = logging.getLogger(__name__)


def fix_example(example: Example) -> Example:
    """ftfy-repair every text field; the full GPT-1 standardisation happens inside the tokenizer."""
    changes = {}
    for field in dataclasses.fields(example):
        value = getattr(example, field.name)
        if isinstance(value, str):
            changes[field.name] = repair(value).strip()
        elif field.name == "choices":
            changes[field.name] = tuple(repair(choice).strip() for choice in value)
    return dataclasses.replace(example, **changes)


def _fix_examples(examples: list[Example]) -> list[Example]:
    return [fix_example(example) for example in examples]


def _characters(example: Example) -> int:
    return sum(len(text) for text in texts_of(example))


def task_definition(name: str, data) -> TaskDefinition:
    """A registered task, or one of params' data.user_tasks (`data`: params' data section)."""
    return registry.TASKS.get(name) or user_task(name, data.user_tasks[name])


def corpus_part(name: str, data) -> registry.CorpusPart:
    return registry.CORPORA.get(name) or user_corpus_part(name, data.user_corpus[name])


def prepare_tasks(data, seed: int, raw: Path, out: Path,
                  workers: Workers | None = None) -> dict[str, dict[str, list[Example]]]:
    """Write data/tasks/<task>/ for each task fine-tuning scores (`data.scored_tasks`: data.tasks and the tasks scored
    with their models; `data`: params' data section) and return the splits;
    ftfy's repairs run on `workers` (default: every core this process may use; gpt1/files/parallel.py)."""
    definitions = {name: task_definition(name, data) for name in data.scored_tasks}
    loaded = {name: definition.load(raw) for name, definition in definitions.items()}
    # One pass over every task's rows, regrouped in order: fewer, fuller chunks than a pass per split.
    rows = (example for found in loaded.values() for examples in found.values() for example in examples)
    prepared = {}
    with shared(workers) as pool, atomic_directory(out) as staging:
        fixed = (example for chunk in pool.map(_fix_examples, rows, length=_characters) for example in chunk)
        for name, found in loaded.items():
            task = definitions[name]
            found = {split: list(itertools.islice(fixed, len(examples))) for split, examples in found.items()}
            found, duplicates = drop_duplicates(found) if task.deduplicate else (found, 0)
            splits = make_splits(found, name, seed, data.task_dev_fraction, data.task_test_fraction,
                                 task.carved_fractions, carve_as=task.spec.model_of)
            for split, examples in splits.items():
                write_examples(split_file(name, split, staging), examples)
            atomic_write_text(task_spec(name, staging), task.spec.to_json())
            stats = {"examples": {split: len(examples) for split, examples in splits.items()},
                     "duplicates_removed": duplicates, "test_majority_rate": None if task.spec.is_regression else majority_rate(splits["test"])}
            atomic_write_text(task_stats(name, staging), json.dumps(stats, indent=2) + "\n")
            prepared[name] = splits
            log.info("task %s: %s; %d exact duplicate example(s) removed before the splits", name,
                     stats["examples"], duplicates)
    return prepared


def evaluation_sentence_keys(prepared: dict[str, dict[str, list[Example]]]) -> set[str]:
    keys = set()
    for splits in prepared.values():
        for split in ("dev", "test"):
            for example in splits[split]:
                for text in texts_of(example):
                    keys.update(k for k in map(sentence_key, sentences(text)) if k)
    return keys


def _paragraphs(document: str) -> list[str]:
    blocks = document.replace("\r\n", "\n").split("\n\n")
    return [" ".join(block.split()) for block in blocks if block.strip()]


# A paragraph after GPT-1's clean-up, its fingerprint (for the dedupe) and the keys of its sentences
# (cleanup.sentence_key, for the decontamination).
CleanParagraph = tuple[str, bytes, tuple[str, ...]]


def _fingerprint(paragraph: str) -> bytes:
    return hashlib.blake2b(paragraph.lower().encode(), digest_size=FINGERPRINT_BYTES).digest()


def _sentence_keys(paragraph: str) -> tuple[str, ...]:
    return tuple(key for key in map(sentence_key, sentences(paragraph)) if key)


def _clean_paragraphs(documents: list[str]) -> list[list[CleanParagraph]]:
    """Each document's paragraphs cleaned, fingerprinted and keyed: the costly part of cleaning (ftfy), in worker
    processes; what depends on earlier documents (deduplication) stays in `clean_documents`."""
    cleaned = []
    for document in documents:
        paragraphs = [clean(paragraph) for paragraph in _paragraphs(document)]
        cleaned.append([(paragraph, _fingerprint(paragraph), _sentence_keys(paragraph)) for paragraph in paragraphs])
    return cleaned


def _decontaminated(paragraph: str, banned: set[str]) -> tuple[str, int]:
    """The paragraph without its banned sentences, and how many there were."""
    parts = sentences(paragraph)
    kept = [part for part in parts if sentence_key(part) not in banned]
    return (paragraph, 0) if len(kept) == len(parts) else (" ".join(kept), len(parts) - len(kept))


def clean_documents(documents: Iterable[str], banned: set[str], min_dedup_chars: int,
                    seen: FingerprintSet, counts: Counter, workers: Workers) -> Iterator[str]:
    """Per paragraph: GPT-1 clean-up, drop exact repeats, drop evaluation sentences; yield documents. The clean-up
    runs on `workers`, the rest here, in the documents' order: a chunk's paragraphs are looked up in `seen` together,
    and only a paragraph holding a banned sentence is split into its sentences again."""
    for chunk in workers.map(_clean_paragraphs, documents):
        long = [fingerprint for paragraphs in chunk for paragraph, fingerprint, _ in paragraphs
                if len(paragraph) >= min_dedup_chars]
        first = iter(seen.first_seen(long).tolist())
        for paragraphs in chunk:
            kept = []
            for paragraph, _, keys in paragraphs:
                if len(paragraph) >= min_dedup_chars and not next(first):
                    counts["duplicate_paragraphs"] += 1
                    continue
                if not banned.isdisjoint(keys):
                    paragraph, dropped = _decontaminated(paragraph, banned)
                    counts["decontaminated_sentences"] += dropped
                if paragraph:
                    kept.append(paragraph)
            if kept:
                counts["documents"] += 1
                yield " \n ".join(kept)  # GPT-1's standardised line break between paragraphs


def task_train_documents(prepared: dict[str, dict[str, list[Example]]]) -> Iterator[str]:
    """One document per training example of every selected task, its texts as paragraphs, its label dropped.

    Only train rows: dev and test are never read here, and decontamination still removes any of their
    sentences that a training row repeats (an SNLI premise shared with a dev pair, say). A multiple-choice
    example gives its context and every candidate, so the text does not reveal which one is right."""
    for splits in prepared.values():
        for example in splits["train"]:
            yield "\n\n".join(texts_of(example))


def prepare_corpus(data, seed: int, raw: Path, out: Path, banned: set[str],
                   prepared: dict[str, dict[str, list[Example]]] | None = None, workers: Workers | None = None) -> dict:
    """Write data/corpus/{train,val}.jsonl (one document per line) and stats.json from `data.corpus`'s parts
    (`data`: params' data section); the clean-up runs on `workers` (default: every core; `clean_documents`)."""
    rng = random.Random(seed)
    seen = FingerprintSet()  # every paragraph kept so far, 16 bytes each
    stats: dict[str, dict] = {}
    with shared(workers) as pool, atomic_directory(out) as staging, open(split_jsonl(staging, "train"), "w") as train, \
            open(split_jsonl(staging, "val"), "w") as val:
        for name in data.corpus:
            counts: Counter = Counter()
            part = corpus_part(name, data)
            raw_documents = task_train_documents(prepared or {}) if part.from_task_train_splits else part.read(raw)
            documents = tqdm(raw_documents, desc=f"clean {name}", unit="doc", disable=None)
            for document in clean_documents(documents, banned, data.min_dedup_chars, seen, counts, pool):
                is_val = rng.random() < data.corpus_val_fraction
                (val if is_val else train).write(json.dumps({"part": name, "text": document}) + "\n")
                counts["val_bytes" if is_val else "train_bytes"] += len(document.encode())
            stats[name] = dict(sorted(counts.items()))
            log.info("corpus %s: %s", name, stats[name])
        totals = Counter()
        for counts in stats.values():
            totals.update(counts)
        stats["total"] = dict(sorted(totals.items()))
        (staging / "stats.json").write_text(json.dumps(stats, indent=2) + "\n")
    return stats


def zero_shot_sentence_keys(raw: Path) -> set[str]:
    """Sentences of the zero-shot-only evaluation sets (agreement minimal pairs), when downloaded."""
    path = raw / packaged.AGREEMENT_FILE
    if not path.exists():
        return set()
    pairs = packaged.read_agreement(path)
    return {k for pair in pairs for text in pair for k in map(sentence_key, sentences(text)) if k}
