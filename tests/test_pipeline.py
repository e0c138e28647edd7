"""The whole pipeline on a tiny configuration, through `dvc repro` and through Snakemake.

Both run in fresh copies of the repository (a temporary git repo, as a user's clone), on real data
from the pinned archives (cached in data/cache, or GPT1_CACHE, across runs). They must produce the same
ablation table, byte for byte, and a second `dvc repro` must have nothing to do.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from tiny import tiny_raw_params

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

TINY = {
    "data": {"corpus": ["lee_background"], "tasks": ["rt_polarity", "snli_100k", "sts_b", "social_iqa"]},
    "bpe": {"merges": 300},
    "model": {"n_positions": 32, "n_layer": 1, "n_head": 2, "d_model": 32, "d_ff": 64},
    "lstm": {"d_embed": 32, "d_hidden": 48},
    "pretrain": {"micro_batch_size": 4, "tokens_per_update": 256, "max_steps": 6, "warmup_steps": 2,
                 "eval_interval": 3, "eval_tokens": 512, "checkpoints": 3, "save_interval": 3},
    "finetune": {"seeds": [1], "epochs": 1, "batch_size": 8, "max_train_examples": 16, "max_eval_examples": 16},
    "analysis": {"layer_transfer_tasks": ["snli_100k", "social_iqa"], "layer_transfer_layers": [0],
                 "layer_transfer_seeds": [1]},
}
OUTPUTS = ["results/ablation.csv", "results/scores.csv", "results/layer_transfer.csv",
           "results/layer_transfer_trend.csv", "results/zero_shot.csv"]

pytestmark = pytest.mark.slow


def _tiny_params() -> dict:
    return tiny_raw_params(**TINY)


def _fresh_copy(destination: Path) -> Path:
    """The working tree's tracked files in a new git repository with one commit, like a clone."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True)
    for name in filter(None, files.stdout.split("\0")):
        if (ROOT / name).is_file():
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, destination / name)
    (destination / "params.yaml").write_text(yaml.safe_dump(_tiny_params(), sort_keys=False))
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
def runs(tmp_path_factory):
    dvc_repo = _fresh_copy(tmp_path_factory.mktemp("dvc"))
    _run([str(BIN / "dvc"), "repro"], dvc_repo)
    smk_repo = _fresh_copy(tmp_path_factory.mktemp("snakemake"))
    _run([str(BIN / "snakemake"), "--cores", "2"], smk_repo)
    return dvc_repo, smk_repo


def test_both_runners_produce_the_same_results(runs):
    dvc_repo, smk_repo = runs
    for output in OUTPUTS:
        assert (dvc_repo / output).read_bytes() == (smk_repo / output).read_bytes(), output


def test_ablation_table_has_every_method_and_task(runs):
    table = pd.read_csv(runs[0] / "results/ablation.csv", index_col="method")
    assert list(table.index) == ["full", "no_pretrain", "no_aux_lm", "lstm"]
    assert list(table.columns) == ["avg", *TINY["data"]["tasks"]]
    assert table.notna().all().all()
    # avg is the mean of the unrounded task scores; the CSV keeps two decimals of each
    assert table["avg"].tolist() == pytest.approx(table[TINY["data"]["tasks"]].mean(axis=1).tolist(), abs=0.011)
    assert "## Findings" in (runs[0] / "results/ablation.md").read_text()


def test_figures_are_drawn(runs):
    for figure in ("results/zero_shot.png", "results/layer_transfer.png"):
        assert (runs[0] / figure).read_bytes()[:4] == b"\x89PNG"
        assert (runs[1] / figure).read_bytes()[:4] == b"\x89PNG"


def test_second_dvc_repro_does_nothing(runs):
    output = _run([str(BIN / "dvc"), "repro"], runs[0])
    assert "Running stage" not in output
    assert "Data and pipelines are up to date" in output
