"""A stage's code fingerprint (gpt1/pipeline/code_fingerprint.py) is its modules' parsed code: comments, docstrings
and layout leave it as it was, any edit of code that runs changes it, and only for the stages that run the module."""

from __future__ import annotations

import shutil

import pytest

from gpt1 import layout
from gpt1.pipeline import code_fingerprint
from gpt1.pipeline.code_fingerprint import code_digest
from tiny import ROOT

SOURCE = '''"""A module."""

import math


class Scaled:
    """A class."""

    factor = 2

    def apply(self, value: float) -> float:
        """A method."""
        return math.floor(value * self.factor)  # why: whole units
'''


@pytest.mark.parametrize("edited", [
    SOURCE.replace('"""A module."""', '"""A module, said otherwise."""'),
    SOURCE.replace('"""A class."""', '"""Another class docstring."""').replace('"""A method."""', "'''A method.'''"),
    SOURCE.replace("  # why: whole units", "  # another comment") + "\n# a last comment\n",
    SOURCE.replace("value * self.factor", "value*self.factor").replace("\n\n\nclass", "\n\nclass"),
    SOURCE.replace('        """A method."""\n', ""),  # a docstring removed
])
def test_comments_docstrings_and_layout_leave_the_digest_as_it_was(edited):
    assert edited != SOURCE and code_digest(edited) == code_digest(SOURCE)


@pytest.mark.parametrize("edited", [
    SOURCE.replace("factor = 2", "factor = 2.0"),  # the same number, another type
    SOURCE.replace("math.floor", "math.ceil"),
    SOURCE.replace("return math", "x = 'not a docstring'\n        return math"),
    SOURCE + "\n\ndef unused() -> int:\n    return 1\n",
    SOURCE.replace('"""A method."""', '"""A method."""\n        "a string after the docstring runs"'),
])
def test_an_edit_of_code_that_runs_changes_the_digest(edited):
    assert code_digest(edited) != code_digest(SOURCE)


def test_the_files_are_refreshed_for_exactly_the_stages_that_run_the_edited_module(tmp_path):
    """On a copy of the package: a comment refreshes nothing, a code edit the files of the stages whose imports reach
    the module (the model: pretraining and fine-tuning, not the BPE)."""
    shutil.copytree(ROOT / "gpt1", tmp_path / "gpt1", ignore=shutil.ignore_patterns("__pycache__"))
    assert code_fingerprint.refresh(tmp_path, tmp_path) == code_fingerprint.stages(tmp_path)  # none there yet: all written
    assert code_fingerprint.stale(tmp_path, tmp_path) == [] and code_fingerprint.refresh(tmp_path, tmp_path) == []
    model = tmp_path / "gpt1/model/lm.py"
    model.write_text(model.read_text() + "\n# a comment\n")
    assert code_fingerprint.stale(tmp_path, tmp_path) == []
    model.write_text(model.read_text() + "\nUNUSED = 1\n")
    stale = code_fingerprint.stale(tmp_path, tmp_path)
    assert {"pretrain", "finetune", "layer_transfer", "transfer_curve", "zeroshot"} <= set(stale)
    assert not {"bpe", "tokenize", "prepare", "download", "ablation"} & set(stale)
    before = (tmp_path / layout.code_fingerprint("bpe")).stat().st_mtime_ns
    assert code_fingerprint.refresh(tmp_path, tmp_path) == stale
    assert (tmp_path / layout.code_fingerprint("bpe")).stat().st_mtime_ns == before  # untouched: Snakemake sees no change
    assert "  gpt1/model/lm.py\n" in (tmp_path / layout.code_fingerprint("pretrain")).read_text()
