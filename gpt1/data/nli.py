"""Natural language inference: the label sets the entailment tasks share (each defined once here), and the one
reader of SNLI's files (the embedded default's 100k subset and the paper profile's full SNLI 1.0 share its
JSON-lines format)."""

from __future__ import annotations

from pathlib import Path

from gpt1.data import row_checks
from gpt1.data.records import EntailmentExample
from gpt1.files.text_files import json_lines

NLI_LABELS = ("entailment", "neutral", "contradiction")  # SNLI's and MNLI's three classes, in label-id order
BINARY_NLI_LABELS = ("entailment", "not_entailment")  # GLUE's two-way RTE and QNLI, and what stands in for RTE


def read_snli(path: Path) -> list[EntailmentExample]:
    """One SNLI 1.0 .jsonl file, texts as written; pairs without a gold label ("-": no annotator majority) are
    dropped, as SNLI's own instructions say."""
    examples = []
    for line, row in json_lines(row_checks.require(path), "not a JSON object ({reason})", "not a JSON object"):
        where = f"{path}:{line}"
        gold = row_checks.field(where, row, "gold_label")
        if gold == "-":
            continue
        premise = row_checks.text(where, row_checks.field(where, row, "sentence1"), "sentence1")
        hypothesis = row_checks.text(where, row_checks.field(where, row, "sentence2"), "sentence2")
        examples.append(EntailmentExample(premise, hypothesis, row_checks.label(where, gold, NLI_LABELS)))
    return examples
