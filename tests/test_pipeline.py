"""The embedded default on the tiny profile, end to end through DVC, applied the way a user applies a profile:
the `dvc exp run -S ...` line that `gpt1 profile profiles/tiny.yaml` prints.

It runs in a fresh copy of the repository (a temporary git repo, as a user's clone), on real data from the
pinned archives (cached in data/cache, or GPT1_CACHE, across runs); a `dvc repro` after the experiment must
have nothing to do. tests/test_paper_pipeline.py runs the paper profile through Snakemake, and
tests/test_dag.py checks that both tools build the same jobs from dvc.yaml for every shipped profile.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from gpt1.config import compose_raw

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

TINY = ["profiles/tiny.yaml"]
OUTPUTS = ["results/ablation.csv", "results/scores.csv", "results/layer_transfer.csv",
           "results/layer_transfer_trend.csv", "results/zero_shot.csv"]

pytestmark = pytest.mark.slow


def _tiny_params() -> dict:
    return compose_raw(ROOT / "params.yaml", [ROOT / path for path in TINY])[0]


def _fresh_copy(destination: Path) -> Path:
    """The working tree's tracked files in a new git repository with one commit, like a clone."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True)
    for name in filter(None, files.stdout.split("\0")):
        if (ROOT / name).is_file():
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, destination / name)
    for command in (["git", "init", "-q"], ["git", "add", "-A"],
                    ["git", "-c", "user.name=test", "-c", "user.email=test@example.com", "commit", "-qm", "tiny"]):
        subprocess.run(command, cwd=destination, check=True)
    return destination


def _run(command: list[str], cwd: Path) -> str:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
           "GPT1_CACHE": os.environ.get("GPT1_CACHE", str(ROOT / "data" / "cache"))}
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    assert result.returncode == 0, f"{' '.join(command)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result.stdout + result.stderr


@pytest.fixture(scope="module")
def dvc_repo(tmp_path_factory):
    repo = _fresh_copy(tmp_path_factory.mktemp("dvc"))
    command = subprocess.run([str(BIN / "gpt1"), "profile", *TINY], cwd=repo, capture_output=True, text=True,
                             check=True).stdout.strip()
    assert command.startswith("dvc exp run -S ")
    _run(["bash", "-c", command], repo)
    return repo


def test_the_experiment_ran_with_the_profile_applied(dvc_repo):
    assert yaml.safe_load((dvc_repo / "params.yaml").read_text()) == _tiny_params()
    for output in OUTPUTS:
        assert (dvc_repo / output).stat().st_size > 0, output


def test_ablation_table_has_every_method_and_task(dvc_repo):
    table = pd.read_csv(dvc_repo / "results/ablation.csv", index_col="method")
    assert list(table.index) == ["full", "no_pretrain", "no_aux_lm", "lstm"]
    tasks = _tiny_params()["data"]["tasks"]
    assert list(table.columns) == ["avg", *tasks]
    assert table.notna().all().all()
    # avg is the mean of the unrounded task scores; the CSV keeps two decimals of each
    assert table["avg"].tolist() == pytest.approx(table[tasks].mean(axis=1).tolist(), abs=0.011)
    assert "## Findings" in (dvc_repo / "results/ablation.md").read_text()


def test_figures_are_drawn(dvc_repo):
    import matplotlib.image

    for figure in ("results/zero_shot.png", "results/layer_transfer.png"):
        pixels = matplotlib.image.imread(dvc_repo / figure)
        assert len(set(map(tuple, pixels.reshape(-1, pixels.shape[-1]).round(2)))) > 10, figure  # not blank


def test_second_dvc_repro_does_nothing(dvc_repo):
    output = _run([str(BIN / "dvc"), "repro"], dvc_repo)
    assert "Running stage" not in output
    assert "Data and pipelines are up to date" in output
