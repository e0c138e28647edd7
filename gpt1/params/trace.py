"""Which params a command read: every key of params.yaml whose value a stage's run looked at, for checking it
against the keys its dvc.yaml entry declares (a key read but not declared leaves DVC blind to its changes; one
declared but not read re-runs the stage for nothing). tests/test_pipeline.py runs the tiny pipeline with
GPT1_PARAMS_TRACE set to a file; each `gpt1` command then appends one JSON line: its arguments and the keys read.
"""

from __future__ import annotations

import atexit
import json
import os
import sys

from pydantic import BaseModel

from gpt1.params.schema import Section

ENVIRONMENT = "GPT1_PARAMS_TRACE"


def _sections(value) -> dict[str, BaseModel] | None:
    """The sections inside a field's value, by the name that continues its key: the value itself (""), or each entry
    of a mapping of sections (params' `methods`: a method's keys are methods.<name>.<key>); None for a plain value."""
    if isinstance(value, BaseModel):
        return {"": value}
    if isinstance(value, dict) and value and all(isinstance(item, BaseModel) for item in value.values()):
        return {f"{key}.": item for key, item in value.items()}
    return None


def _leaves(section: BaseModel, prefix: str) -> list[str]:
    keys = []
    for name in type(section).model_fields:
        inner = _sections(section.__dict__[name])
        keys += [prefix + name] if inner is None else [
            key for entry, item in inner.items() for key in _leaves(item, f"{prefix}{name}.{entry}")]
    return keys


def record_reads(params: BaseModel) -> set[str]:
    """From now on, note each key of `params` whose value is read (an attribute of a section, or a whole section
    dumped); returns the live set of dotted keys. Copies made with `model_copy` are not followed."""
    prefixes: dict[int, str] = {}

    def walk(section: BaseModel, prefix: str) -> None:
        prefixes[id(section)] = prefix
        for name in type(section).model_fields:
            for entry, item in (_sections(section.__dict__[name]) or {}).items():
                walk(item, f"{prefix}{name}.{entry}")

    walk(params, "")
    read: set[str] = set()
    plain_getattribute, plain_dump = Section.__getattribute__, Section.model_dump

    def getattribute(self, name):
        value = plain_getattribute(self, name)
        prefix = prefixes.get(id(self))
        if prefix is not None and name in type(self).model_fields and _sections(value) is None:
            read.add(prefix + name)
        return value

    def model_dump(self, *args, **kwargs):
        prefix = prefixes.get(id(self))
        if prefix is not None:
            read.update(_leaves(self, prefix))
        return plain_dump(self, *args, **kwargs)

    Section.__getattribute__ = getattribute
    Section.model_dump = model_dump
    return read


def trace_if_asked(params: BaseModel) -> None:
    """With GPT1_PARAMS_TRACE set, record what this process reads and append it to that file at exit."""
    path = os.environ.get(ENVIRONMENT)
    if not path:
        return
    read = record_reads(params)

    def write() -> None:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"argv": sys.argv[1:], "read": sorted(read)}) + "\n")

    atexit.register(write)
