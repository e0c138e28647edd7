"""The paper's numbers, by the paper's own names, written once: Tables 2-4 (test sets, single model) and Table 5
(GLUE dev sets, one row per method), and which of them each registered task is set beside. Plain data:
gpt1/eval/paper_tables.py sets our tasks beside Tables 2-4, the ablation prints Table 5 beside ours for every
method of params.yaml's `methods` the paper has a row for.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PaperScore:
    table: int
    metric: str  # as gpt1/eval/metrics.py names it
    value: float  # ×100


TABLE_TITLES = {2: "Table 2: natural language inference",
                3: "Table 3: question answering and commonsense reasoning",
                4: "Table 4: semantic similarity and classification"}
PAPER_SCORES: dict[str, PaperScore] = {
    "MNLI-m": PaperScore(2, "accuracy", 82.1), "MNLI-mm": PaperScore(2, "accuracy", 81.4),
    "SNLI": PaperScore(2, "accuracy", 89.9), "SciTail": PaperScore(2, "accuracy", 88.3),
    "QNLI": PaperScore(2, "accuracy", 88.1), "RTE": PaperScore(2, "accuracy", 56.0),
    "Story Cloze": PaperScore(3, "accuracy", 86.5), "RACE-m": PaperScore(3, "accuracy", 62.9),
    "RACE-h": PaperScore(3, "accuracy", 57.4), "RACE": PaperScore(3, "accuracy", 59.0),
    "CoLA": PaperScore(4, "matthews", 45.4), "SST-2": PaperScore(4, "accuracy", 91.3),
    "MRPC": PaperScore(4, "f1", 82.3), "STS-B": PaperScore(4, "pearson", 82.0), "QQP": PaperScore(4, "f1", 70.3),
}
# Table 4's GLUE column is the leaderboard's score: WNLI counted, MRPC, QQP and STS-B as the mean of two
# metrics. Ours, where all nine tasks below are selected, is the plain mean of their scores above.
PAPER_GLUE = 72.8
GLUE_TASKS = ("CoLA", "SST-2", "MRPC", "STS-B", "QQP", "MNLI-m", "MNLI-mm", "QNLI", "RTE")

# Our registered task -> the result above it is set beside. A registered task missing here fails a test: every
# task gets a row. Tasks of the paper profile (gpt1/data/paper_tasks.py) are the paper's own; the others stand in
# for one. A user's own task (data.user_tasks) has none: Tables 2-4 list it apart.
COMPARED_WITH: dict[str, str] = {
    "cola": "CoLA", "sst2": "SST-2", "mrpc": "MRPC", "stsb": "STS-B", "qqp": "QQP", "mnli": "MNLI-m",
    "mnli_mm": "MNLI-mm", "qnli": "QNLI", "rte": "RTE", "snli": "SNLI", "scitail": "SciTail", "race": "RACE",
    "story_cloze": "Story Cloze",
    "rt_polarity": "SST-2", "snli_100k": "SNLI", "vitaminc": "RTE", "lee_similarity": "STS-B", "sts_b": "STS-B",
    "social_iqa": "RACE",
}

# Table 5 prints its columns in its own spelling (SST2 and STSB for SST-2 and STS-B above; one MNLI, the matched and
# mismatched dev sets together), and its rows by method (the names of params.yaml's `methods` entries), on GLUE's dev sets.
TABLE_5_COLUMNS = ("avg", "CoLA", "SST2", "MRPC", "STSB", "QQP", "MNLI", "QNLI", "RTE")
TABLE_5: dict[str, tuple[float, ...]] = {
    "full": (74.7, 45.4, 91.3, 82.3, 82.0, 70.3, 81.8, 88.1, 56.0),
    "no_pretrain": (59.9, 18.9, 84.0, 79.4, 30.9, 65.5, 75.7, 71.2, 53.8),
    "no_aux_lm": (75.0, 47.9, 92.0, 84.9, 83.2, 69.8, 81.1, 86.9, 54.4),
    "lstm": (69.1, 30.3, 90.5, 83.2, 71.8, 68.1, 73.7, 81.1, 54.6),
}
