"""`gpt1 predict`: run a fine-tuned task model (one the finetune stage kept) on new examples.

Input: JSON lines in the task's own fields (`text`; `premise`, `hypothesis`; `a`, `b`; `context`,
`choices`), as data/tasks/<task>/*.jsonl hold them, with an optional `label` that is echoed back; for a
classification task plain text lines work too, one example per line. Output: one JSON line per example,
with the predicted label (its index and its name), the class or candidate probabilities, or the predicted
score of a regression task. Examples are encoded exactly as the run encoded its own (the same BPE, input
transformation and context length), and scored by the same code that wrote its predictions files.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Iterable

import torch

from gpt1.data.records import RECORD_TYPES, Example, TaskSpec, check_examples
from gpt1.errors import UserError
from gpt1.model.task_checkpoint import TaskRun, load_task_model
from gpt1.model.task_encoding import encode_examples
from gpt1.files.text_files import open_text, read_stdin
from gpt1.tokenizer.bpe import Gpt1Bpe
from gpt1.layout import RUN_WEIGHTS
from gpt1.train.finetune_predict import EVAL_BATCH_SIZE, predict, prediction_rows


def input_fields(spec: TaskSpec) -> list[str]:
    return [field.name for field in dataclasses.fields(RECORD_TYPES[spec.family]) if field.name != "label"]


def parse_example(line: str, spec: TaskSpec, where: str) -> tuple[Example, object]:
    """One input line -> (example, its given label or None). A missing label is filled with a valid
    placeholder for encoding only; it never reaches the output."""
    fields = input_fields(spec)
    text = line.strip()
    if not text:
        raise UserError(f"{where}: empty line; give one example per line")
    if text.startswith("{"):
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as error:
            raise UserError(f"{where}: not valid JSON ({error.msg})") from None
    elif fields == ["text"]:
        raw = {"text": text}
    else:
        raise UserError(f"{where}: a {spec.family} task reads JSON lines with the fields {fields}, e.g. "
                        + json.dumps(dict.fromkeys(fields, "...")))
    missing = [name for name in fields if name not in raw]
    unknown = sorted(set(raw) - set(fields) - {"label"})
    if missing or unknown:
        raise UserError(f"{where}: a {spec.family} example ({spec.name}) has the fields {fields} (and optionally "
                        f"label); missing {missing}, unknown {unknown}")
    if "choices" in fields and not isinstance(raw["choices"], list):
        raise UserError(f"{where}: choices must be a JSON list of answers, found {raw['choices']!r}")
    texts = [name for name in fields if name != "choices" and not isinstance(raw[name], str)]
    if texts:
        raise UserError(f"{where}: {texts[0]} must be a JSON string of text, found {raw[texts[0]]!r}")
    given = raw.get("label")
    values = {name: tuple(raw[name]) if isinstance(raw[name], list) else raw[name] for name in fields}
    example = RECORD_TYPES[spec.family](**values, label=given if given is not None else 0)
    check_examples([example], spec, where, fix="fix the input")
    return example, given


def read_examples(lines: Iterable[str], spec: TaskSpec, source: str) -> tuple[list[Example], list]:
    parsed = [parse_example(line, spec, f"{source}:{number}") for number, line in enumerate(lines, start=1)]
    if not parsed:
        raise UserError(f"{source}: no examples to predict")
    return [example for example, _ in parsed], [label for _, label in parsed]


def predictions(run_dir: Path, lines: Iterable[str], bpe_dir: Path, source: str = "input",
                device: str | torch.device = "cpu") -> list[dict]:
    task_model, run = load_task_model(Path(run_dir) / RUN_WEIGHTS, device)
    examples, given = read_examples(lines, run.spec, source)
    bpe = Gpt1Bpe.load(bpe_dir)
    if task_model.language_model.config.vocab_size != bpe.vocab_size:
        raise UserError(f"{bpe_dir} has {bpe.vocab_size} tokens but the model in {run_dir} has "
                        f"{task_model.language_model.config.vocab_size}; use the BPE it was trained with (--bpe)")
    encoded = encode_examples(examples, run.spec, bpe, run.n_ctx, where=source)
    outputs = predict(task_model, encoded, EVAL_BATCH_SIZE, torch.device(device))
    rows = prediction_rows(outputs, encoded, task_model.regression)
    return [_output_row(row, label, run) for row, label in zip(rows, given)]


def _output_row(row: dict, given, run: TaskRun) -> dict:
    out = {"index": row["index"], "prediction": row["prediction"]}
    if run.spec.labels and run.spec.family != "multiple_choice":
        out["prediction_name"] = run.spec.labels[row["prediction"]]
    if "probabilities" in row:
        out["probabilities"] = row["probabilities"]
    if given is not None:
        out["label"] = given
    return out


def main(args) -> None:
    if str(args.input) == "-":
        rows = predictions(args.run, read_stdin().splitlines(), args.bpe, "stdin")
    else:
        if not Path(args.input).is_file():
            raise UserError(f"{args.input} does not exist; give a JSONL file of examples, or - for stdin")
        with open_text(args.input) as handle:
            rows = predictions(args.run, handle, args.bpe, str(args.input))
    sys.stdout.write("".join(json.dumps(row) + "\n" for row in rows))
