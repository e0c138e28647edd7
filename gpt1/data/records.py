"""One record type per task family, the task description, their JSONL files, and the checks on their labels.

Every task, embedded or from the paper profile, ends up as `data/tasks/<task>/{train,dev,test}.jsonl`
plus `task.json`, so fine-tuning and evaluation never see where the data came from.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Literal, Sequence, Union

from gpt1.files.atomic import atomic_write_text
from gpt1.errors import UserError
from gpt1.files.text_files import open_text, read_text

Family = Literal["classification", "entailment", "similarity", "multiple_choice"]
Metric = Literal["accuracy", "f1", "matthews", "pearson", "spearman"]
SPLITS = ("train", "dev", "test")


@dataclass(frozen=True)
class ClassificationExample:
    text: str
    label: int


@dataclass(frozen=True)
class EntailmentExample:
    premise: str
    hypothesis: str
    label: int


@dataclass(frozen=True)
class SimilarityExample:
    """A sentence pair; `label` is a class index (MRPC, QQP) or a score (STS-B) per the task's spec."""

    a: str
    b: str
    label: float


@dataclass(frozen=True)
class MultipleChoiceExample:
    context: str
    choices: tuple[str, ...]
    label: int


Example = Union[ClassificationExample, EntailmentExample, SimilarityExample, MultipleChoiceExample]
RECORD_TYPES: dict[str, type] = {
    "classification": ClassificationExample,
    "entailment": EntailmentExample,
    "similarity": SimilarityExample,
    "multiple_choice": MultipleChoiceExample,
}


@dataclass(frozen=True)
class TaskSpec:
    """What a task is: its family, label names (empty for a regression target), and paper metrics."""

    name: str
    family: Family
    labels: tuple[str, ...]
    metrics: tuple[Metric, ...]
    source: str
    stands_for: str = ""
    # The task whose fine-tuned model this one is scored with on its own dev and test splits, training none of its
    # own (MNLI mismatched: mnli's model, as the paper evaluates one MNLI model on both sets); None: it trains its own.
    model_of: str | None = None

    @property
    def primary_metric(self) -> str:
        """The paper's headline metric for the task, the one Table 5 and the curves compare (accuracy, MCC, F1 or
        Pearson): the first of `metrics`."""
        return self.metrics[0]

    @property
    def is_regression(self) -> bool:
        return self.family == "similarity" and not self.labels

    def to_json(self) -> str:
        """The spec as task.json holds it; `model_of` only where it is set, so a task that trains its own model
        keeps the file it always had."""
        fields = dataclasses.asdict(self)
        if fields["model_of"] is None:
            del fields["model_of"]
        return json.dumps(fields, indent=2) + "\n"

    @classmethod
    def from_dict(cls, raw: dict) -> "TaskSpec":
        """The spec `to_json` wrote, read back (JSON has lists where the spec has tuples)."""
        return cls(**{**raw, "labels": tuple(raw["labels"]), "metrics": tuple(raw["metrics"])})

    @classmethod
    def from_file(cls, path: Path) -> "TaskSpec":
        return cls.from_dict(json.loads(read_text(path)))


def texts_of(example: Example) -> list[str]:
    """Every piece of text in an example, in input order (for encoding and decontamination)."""
    if isinstance(example, ClassificationExample):
        return [example.text]
    if isinstance(example, EntailmentExample):
        return [example.premise, example.hypothesis]
    if isinstance(example, SimilarityExample):
        return [example.a, example.b]
    if isinstance(example, MultipleChoiceExample):
        return [example.context, *example.choices]
    raise TypeError(f"not a task example: {type(example).__name__}")


def write_examples(path: Path, examples: Iterable[Example]) -> None:
    lines = [json.dumps(dataclasses.asdict(e), ensure_ascii=False) for e in examples]
    atomic_write_text(path, "".join(line + "\n" for line in lines))


def read_examples(path: Path, family: Family) -> list[Example]:
    record_type = RECORD_TYPES[family]
    examples = []
    with open_text(path) as handle:
        for row_number, line in enumerate(handle, start=1):
            examples.append(_record(line, record_type, family, f"{path}:{row_number}"))
    return examples


def _record(line: str, record_type: type, family: Family, where: str) -> Example:
    try:
        raw = json.loads(line)
        if not isinstance(raw, dict):
            raise TypeError("a JSON object per line expected")
        if "choices" in raw:
            if not isinstance(raw["choices"], list):
                raise TypeError("choices must be a list")
            raw["choices"] = tuple(raw["choices"])
        return record_type(**raw)
    except (json.JSONDecodeError, TypeError) as error:
        raise UserError(f"{where}: not a {family} record ({error}); re-run `gpt1 prepare`") from None


def check_examples(examples: Sequence[Example], spec: TaskSpec, where: str,
                   fix: str = "fix the data and re-run `gpt1 prepare`") -> None:
    """Stop with one clear message on an empty split or a label the task cannot have."""
    if not examples:
        raise UserError(f"{where}: the split is empty; re-run `gpt1 prepare` or check the task's source")
    for row, example in enumerate(examples, start=1):
        problem = _label_problem(example, spec)
        if problem:
            raise UserError(f"{where}:{row}: {problem}; {fix}")


def _label_problem(example: Example, spec: TaskSpec) -> str | None:
    fields = [(name, value) for name, value in dataclasses.asdict(example).items() if name != "label"]
    for name, value in fields:
        for text in value if isinstance(value, (list, tuple)) else [value]:
            if not isinstance(text, str) or not text.strip():
                return f"{name} must be non-empty text, found {text!r}"
    label = example.label
    if isinstance(label, bool) or not isinstance(label, (int, float)) or not math.isfinite(label):
        return f"label {label!r} is not a finite number"
    if spec.family == "multiple_choice":
        count = len(example.choices)
        if count < 2:
            return f"a multiple-choice row needs at least 2 choices, found {count}"
        if not float(label).is_integer() or not 0 <= label < count:
            return f"gold index {label!r} is outside the {count} choices (0..{count - 1})"
        return None
    if spec.is_regression:
        return None
    if not float(label).is_integer() or not 0 <= label < len(spec.labels):
        return f"label {label!r} is outside the task's label set {list(spec.labels)} (0..{len(spec.labels) - 1})"
    return None
