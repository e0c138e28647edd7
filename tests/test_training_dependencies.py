"""A GPU node's image often lacks the text-processing libraries (spaCy, mwparserfromhell) that only the data stages
need; parsing params.yaml and the training stages must not import them (on the first GPU machine, params parsing
imported mwparserfromhell through the task registry, and every training command stopped there)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA_ONLY = ("mwparserfromhell", "spacy")


def test_params_and_the_training_stages_load_without_the_data_stages_libraries():
    blocked = "; ".join(f"sys.modules[{name!r}] = None" for name in DATA_ONLY)  # None: any import of it fails
    script = (f"import sys; {blocked}\n"
              "from gpt1.params.schema import load_params\n"
              f"params = load_params({str(ROOT / 'params.yaml')!r}, [{str(ROOT / 'profiles/gpu.yaml')!r}])\n"
              "import gpt1.stages.pretrain, gpt1.stages.finetune, gpt1.stages.starting_model, gpt1.commands.benchmark\n"
              "print(params.model.n_layer)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "6"
