"""Where the pipeline keeps what it writes: every stage, the analysis and the logs build their paths here.

dvc.yaml spells the same paths for DVC (which cannot call Python); tests/test_dag.py checks that the outputs
it declares are the ones built here, for every profile. Library functions take paths as arguments: only
stages (and the CLI) call these with the pipeline's roots.
"""

from __future__ import annotations

from pathlib import Path

DATA = Path("data")
RESULTS = Path("results")
LOGS = Path("logs")
TASKS = DATA / "tasks"
BPE = DATA / "bpe"
PRETRAIN = DATA / "pretrain"
STARTING_MODELS = DATA / "starting_models"
TASK_TOKENS = DATA / "task_tokens"
# Folders the pipeline writes and replaces whole (DVC removes a stage's outputs before running it): a user's
# own files (data.local_paths) must live elsewhere.
PIPELINE_FOLDERS = tuple(str(DATA / name) for name in ("raw", "corpus", "tasks", "bpe", "tokens", "pretrain",
                                                        "starting_models", "task_tokens", "user_files")) + (str(RESULTS),)
# A one-off `--seed` run writes here, never into a stage's DVC output folder (which only the DAG writes).
ONE_OFF = RESULTS / "one-off"


def pretrained_model(kind: str, pretrain_dir: Path = PRETRAIN) -> Path:
    """The published checkpoint of a pretrained model ("transformer" or "lstm")."""
    return Path(pretrain_dir) / kind / "model.safetensors"


def checkpoint_steps(max_steps: int, count: int) -> list[int]:
    """The updates after which pretraining keeps a checkpoint: `count` log-spaced update numbers from 1 to
    max_steps (fewer when rounding makes them collide). Params validation and the analysis read them too."""
    import numpy as np  # late: every command imports this module

    if max_steps == 0:
        return []
    if count == 1:
        return [max_steps]
    return sorted({int(round(step)) for step in np.geomspace(1, max_steps, count)} | {max_steps})


def checkpoint_file(step: int) -> str:
    """The name of the pretraining checkpoint kept after update `step` (pretrain.checkpoints, log-spaced)."""
    return f"step_{step}.safetensors"


def pretraining_checkpoint(kind: str, step: int, pretrain_dir: Path = PRETRAIN) -> Path:
    """A kept pretraining checkpoint of a model ("transformer" or "lstm"), published with its final weights."""
    return Path(pretrain_dir) / kind / "checkpoints" / checkpoint_file(step)


def task_tokens(task: str, root: Path = TASK_TOKENS) -> Path:
    """One task's fine-tuning examples as BPE ids (the encode_task stage; gpt1/model/task_tokens.py)."""
    return Path(root) / task


def starting_model_record(variant: str, records_dir: Path = STARTING_MODELS) -> Path:
    """The record of the weights a method starts from, on which its fine-tuning jobs depend
    (gpt1/train/starting_weights.py)."""
    return Path(records_dir) / f"{variant}.json"


def finetune_runs(task: str, variant: str, results: Path = RESULTS) -> Path:
    """The finetune stage's output for one (task, variant): a folder per seed (`seed_run`)."""
    return Path(results) / "finetune" / task / variant


def layer_transfer_runs(task: str, layers: int, results: Path = RESULTS) -> Path:
    """The layer_transfer stage's output for one (task, k): `full` with k pretrained blocks, a folder per seed."""
    return Path(results) / "layer_transfer" / task / f"layers{layers}"


def transfer_curve_runs(task: str, step: int, results: Path = RESULTS) -> Path:
    """The transfer_curve stage's output for one (task, checkpoint): `full` fine-tuned from pretraining update
    `step`, a folder per seed."""
    return Path(results) / "transfer_curve" / task / f"step{step}"


def seed_run(runs: Path, seed: int) -> Path:
    """One seed's folder (predictions, metrics.json, model card) inside a stage's runs folder."""
    return Path(runs) / f"seed{seed}"


def finetune_run(task: str, variant: str, seed: int, results: Path = RESULTS) -> Path:
    return seed_run(finetune_runs(task, variant, results), seed)


def layer_transfer_run(task: str, layers: int, seed: int, results: Path = RESULTS) -> Path:
    return seed_run(layer_transfer_runs(task, layers, results), seed)


def transfer_curve_run(task: str, step: int, seed: int, results: Path = RESULTS) -> Path:
    return seed_run(transfer_curve_runs(task, step, results), seed)


def job_log(stage: str, task: str | None = None, variant: str | None = None, layers: int | None = None,
            model: str | None = None, seed: int | None = None, step: int | None = None) -> Path:
    """One log per job, so parallel jobs never share a file (the Snakefile declares the same names); a one-off
    `--seed` run gets its own file, so it never overwrites the log of the stage's run."""
    if stage == "pretrain":
        return LOGS / "pretrain" / f"{model}.log"
    if stage == "starting-model":
        return LOGS / "starting_model" / f"{variant}.log"
    if stage == "encode-task":
        return LOGS / "encode_task" / f"{task}.log"
    if stage == "finetune":
        run = LOGS / "finetune" / task / variant
    elif stage == "layer-transfer":
        run = LOGS / "layer_transfer" / task / f"layers{layers}"
    elif stage == "transfer-curve":
        run = LOGS / "transfer_curve" / task / f"step{step}"
    else:
        return LOGS / f"{stage}.log"
    return run.with_name(f"{run.name}.log") if seed is None else run / f"seed{seed}.log"
