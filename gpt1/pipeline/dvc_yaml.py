"""dvc.yaml's text, from the rows of gpt1/pipeline/stage_table.py: each row becomes its stage's entry (the command
with an option per job axis, a matrix or foreach over the axes, its help as `desc`, its data dependencies then the
file that fingerprints the code it runs (gpt1/pipeline/code_fingerprint.py), its params and outputs), and each note
a YAML comment.

Written by hand-rolled YAML rather than yaml.dump, so that the comments stay beside what they explain and the file
keeps the project's layout; the text parses to the entries built here (tests/test_dag.py resolves it as DVC does).
`desc` changes neither a stage's status nor dvc.lock: DVC leaves it out of both.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import yaml

from gpt1 import layout
from gpt1.pipeline.stage_spec import KEY, Entry, Out, StageSpec, each, flag
from gpt1.pipeline.stage_table import METRICS, PLOTS, STAGES, module_name

WIDTH = 120  # the longest line; a note that would run past it goes above its entry
OUTPUT_KINDS = ("outs", "metrics", "plots")


def text() -> str:
    """dvc.yaml's stages, then its top-level plots and metrics."""
    stages = []
    for command, spec in STAGES.items():
        # A stage DVC runs every time needs no code dependency; every other depends on its code's fingerprint.
        code = [] if spec.always_changed else [str(layout.code_fingerprint(module_name(command)))]
        stages.append("\n".join(lines({module_name(command): entry(command, spec, code)}, 2)))
    top = ["\n".join(lines({"plots": PLOTS}, 0)), "\n".join(lines({"metrics": METRICS}, 0))]
    return "\n\n".join(["stages:\n" + "\n\n".join(stages), *top]) + "\n"


def entry(command: str, spec: StageSpec, code: list[str]) -> dict:
    """A stage's dvc.yaml entry; `code`: the file fingerprinting the code it runs, listed after its data
    dependencies."""
    foreach = [values for values in spec.jobs.values() if isinstance(values, dict)]
    if foreach and len(spec.jobs) > 1:
        raise ValueError(f"stage {command}: a foreach has one axis, its key; spell the others as matrix axes")
    options = [f"{flag(option)} {KEY if foreach else each(option)}" for option in spec.jobs]
    body = {"desc": spec.help, "cmd": " ".join(["gpt1", command, *options])}
    if spec.always_changed:
        body["always_changed"] = True
    if spec.deps or code:
        body["deps"] = [*spec.deps, *code]
    if spec.params:
        body["params"] = list(spec.params)
    for kind in OUTPUT_KINDS:
        if listed := [_output(out) for out in spec.outputs if out.kind == kind]:
            body[kind] = listed
    if foreach:
        body = {"foreach": foreach[0], "do": body}
    elif spec.jobs:
        body = {"desc": body.pop("desc"), "matrix": {axis: f"${{{key}}}" for axis, key in spec.jobs.items()}, **body}
    if spec.why:  # above the entry's first key
        first = next(iter(body))
        body[first] = Entry(body[first], spec.why)
    return body


def _output(out: Out):
    flags = {**({"cache": False} if not out.cache else {}), **({"persist": True} if out.persist else {})}
    value = {str(out.path): flags} if flags else out.path
    return Entry(value, out.note) if out.note else value


def lines(value, indent: int) -> list[str]:
    """A mapping or list as block YAML at `indent` spaces, lists indented below their key. An Entry's note is a comment:
    above a key, and beside a list item where the line stays within WIDTH (else above it)."""
    pad, out = " " * indent, []
    if isinstance(value, dict):
        for key, item in value.items():
            item, note = (item.value, item.note) if isinstance(item, Entry) else (item, None)
            head = f"{pad}{scalar(key)}:"
            out += [*comment(note, pad), f"{head} {scalar(item)}"] if is_scalar(item) else [
                *comment(note, pad), head, *lines(item, indent + 2)]
        return out
    for item in value:
        item, note = (item.value, item.note) if isinstance(item, Entry) else (item, None)
        if is_scalar(item):
            line = f"{pad}- {scalar(item)}"
            beside = f"{line}  # {note}"
            out += [beside] if note and len(beside) <= WIDTH else [*comment(note, pad), line]
        else:
            first, *rest = lines(item, indent + 2)
            out += [*comment(note, pad), f"{pad}- {first.lstrip()}", *rest]
    return out


def comment(note: str | None, pad: str) -> list[str]:
    return [f"{pad}# {line}" for line in textwrap.wrap(note or "", WIDTH - len(pad) - 2, break_on_hyphens=False,
                                                        break_long_words=False)]


def is_scalar(value) -> bool:
    return isinstance(value, (str, Path, bool, int, float))


def scalar(value) -> str:
    """A scalar as YAML reads it back: plain where it parses as itself (as a key and as a value), quoted otherwise."""
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    if isinstance(value, (int, float)):
        return text
    try:
        plain = yaml.safe_load(f"{text}: {text}") == {text: text}
    except yaml.YAMLError:
        plain = False
    return text if plain else json.dumps(text)
