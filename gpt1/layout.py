"""Where the pipeline keeps what it writes: every stage, the analysis and the logs build their paths here.

The stage table (gpt1/pipeline/stage_table.py) writes dvc.yaml's paths with these functions over DVC's placeholders
(`${item.task}`); tests/test_dag.py checks that every job's resolved paths are the ones built here from its own
values, for every profile. Library functions take paths as arguments: only stages (and the CLI) call these with the
pipeline's roots.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

DATA = Path("data")
RESULTS = Path("results")
LOGS = Path("logs")
USER_FILES = DATA / "user_files"
RAW = DATA / "raw"
CORPUS = DATA / "corpus"
TASKS = DATA / "tasks"
BPE = DATA / "bpe"
TOKENS = DATA / "tokens"
TOKENS_META = TOKENS / "meta.json"  # what `gpt1 tokenize` writes: each split's documents, tokens and characters
PRETRAIN = DATA / "pretrain"
STARTING_MODELS = DATA / "starting_models"
TASK_TOKENS = DATA / "task_tokens"
ZERO_SHOT = DATA / "zero_shot"
# Downloaded archives, kept between runs (GPT1_CACHE names another folder; gpt1/data/sources.py).
CACHE = DATA / "cache"
# The folders of data/ the pipeline writes, each replaced whole (DVC removes a stage's outputs before running it),
# and the download cache: what `make clean` removes, never anything else a user put in data/.
DATA_FOLDERS = tuple(str(DATA / name) for name in ("raw", "corpus", "tasks", "bpe", "tokens", "pretrain",
                                                    "starting_models", "task_tokens", "zero_shot", "training_state",
                                                    "user_files", "cache"))
# Where a user's own files (data.local_paths, data.user_tasks, data.user_corpus) may not live: the pipeline writes
# there and `make clean` empties data/.
PIPELINE_FOLDERS = (str(DATA), str(RESULTS))
# A one-off `--seed` run writes here, never into a stage's DVC output folder (which only the DAG writes).
ONE_OFF = RESULTS / "one-off"
# Fine-tuning's work in progress and finished seeds (gpt1/train/seed_state.py), outside every declared output:
# DVC deletes a stage's outputs before it runs it again, Snakemake those of a failed job.
TRAINING_STATE = DATA / "training_state"


# Inside a pretraining run's folder (`pretraining_run`): the final weights and the kept checkpoints' folder.
MODEL_FILE = "model.safetensors"
CHECKPOINTS = "checkpoints"
# Inside one fine-tuning run's folder (`seed_run`): fine-tuning writes these, evaluation and analysis read them.
RUN_METRICS = "metrics.json"  # {"dev": {metric: value}, "test": {...}}
RUN_CARD = "model_card.md"
RUN_WEIGHTS = "model.safetensors"  # the fine-tuned task model, where kept (`gpt1 predict` reads it)


def run_predictions(split: str) -> str:
    """The file of one split's predictions inside a fine-tuning run's folder."""
    return f"predictions_{split}.jsonl"


def user_files_record(setting: str, root: Path = USER_FILES) -> Path:
    """The fingerprint of the files behind one params setting that names paths outside the project
    (data.local_paths, bpe.import_from, pretrain.init_from; the user_files stage)."""
    return Path(root) / f"{setting}.json"


# Each stage's code fingerprint (gpt1/pipeline/code_fingerprint.py): tracked with git, beside dvc.yaml, since a
# fresh clone must find them as the code it holds gives them.
CODE_FINGERPRINTS = Path("code_fingerprints")


def code_fingerprint(stage: str, root: Path = CODE_FINGERPRINTS) -> Path:
    """The file a stage depends on for its code (a stage named as its dvc.yaml name, e.g. `encode_task`)."""
    return Path(root) / f"{stage}.txt"


def pretraining_run(kind: str, pretrain_dir: Path = PRETRAIN) -> Path:
    """The folder of one model's pretraining (a kind of gpt1/kinds.py): its weights, its kept checkpoints and,
    while it runs, its resume state."""
    return Path(pretrain_dir) / kind


def pretraining_metrics(kind: str, results: Path = RESULTS) -> Path:
    """Where one model's pretraining writes its metrics (DVCLive: metrics.json, plots/metrics/)."""
    return Path(results) / "pretrain" / kind


# Beside DVCLive's metrics.json in a pretraining's metrics folder: the one number of it that `dvc exp show` lists,
# {kind: {"val_loss": ...}} (named by kind, so the column reads `transformer.val_loss`). DVCLive's file keeps the rest
# (sizes, device, timings, the last training loss) and is not declared as DVC metrics, so that view stays short.
PRETRAINING_HEADLINE = "headline.json"


def pretraining_headline(kind: str, results: Path = RESULTS) -> Path:
    """The pretraining metric `dvc exp show` and `dvc metrics diff` compare (PRETRAINING_HEADLINE)."""
    return pretraining_metrics(kind, results) / PRETRAINING_HEADLINE


def pretrained_model(kind: str, pretrain_dir: Path = PRETRAIN) -> Path:
    """The published checkpoint of a pretrained model (a kind of gpt1/kinds.py)."""
    return pretraining_run(kind, pretrain_dir) / MODEL_FILE


def pretraining_checkpoints(kind: str, pretrain_dir: Path = PRETRAIN) -> Path:
    """The folder of the checkpoints kept during pretraining (`checkpoint_file`)."""
    return pretraining_run(kind, pretrain_dir) / CHECKPOINTS


CHECKPOINT_PREFIX, CHECKPOINT_SUFFIX = "step_", ".safetensors"  # step_<update>.safetensors


def checkpoint_file(step: int) -> str:
    """The name of the pretraining checkpoint kept after update `step` (pretrain.checkpoints, log-spaced)."""
    return f"{CHECKPOINT_PREFIX}{step}{CHECKPOINT_SUFFIX}"


def kept_checkpoints(folder: Path) -> dict[int, Path]:
    """{update: file} of the checkpoint files in `folder` (a run's checkpoints, or pretraining's staging folder)."""
    found = {}
    for path in Path(folder).glob(f"{CHECKPOINT_PREFIX}*{CHECKPOINT_SUFFIX}"):
        step = path.name.removeprefix(CHECKPOINT_PREFIX).removesuffix(CHECKPOINT_SUFFIX)
        if step.isascii() and step.isdigit():
            found[int(step)] = path
    return found


def pretraining_checkpoint(kind: str, step: int, pretrain_dir: Path = PRETRAIN) -> Path:
    """A kept pretraining checkpoint of a model (a kind of gpt1/kinds.py), published with its final weights."""
    return pretraining_checkpoints(kind, pretrain_dir) / checkpoint_file(step)


# Inside a prepared task's folder (`prepared_task`): what the task is (a TaskSpec), beside a <split>.jsonl per split.
TASK_SPEC = "task.json"
# Beside it: the split sizes, the exact duplicates removed, and the test split's majority-class rate.
TASK_STATS = "stats.json"


def prepared_task(task: str, tasks_dir: Path = TASKS) -> Path:
    """One task's folder as the prepare stage writes it: its spec (TASK_SPEC) and its splits."""
    return Path(tasks_dir) / task


def task_spec(task: str, tasks_dir: Path = TASKS) -> Path:
    return prepared_task(task, tasks_dir) / TASK_SPEC


def task_stats(task: str, tasks_dir: Path = TASKS) -> Path:
    return prepared_task(task, tasks_dir) / TASK_STATS


def split_jsonl(folder: Path, split: str) -> Path:
    """One split's rows, a JSON object a line, as every split folder holds them: a prepared task's examples, an
    encoded task's BPE ids, the corpus's documents."""
    return Path(folder) / f"{split}.jsonl"


def split_file(task: str, split: str, tasks_dir: Path = TASKS) -> Path:
    """One split's examples in a prepared task's folder."""
    return split_jsonl(prepared_task(task, tasks_dir), split)


def zero_shot_tasks(root: Path = ZERO_SHOT) -> Path:
    """The zero-shot heuristics' candidates as token ids (the encode_zeroshot stage;
    gpt1/eval/zeroshot_candidates.py)."""
    return root / "tasks.json"


def task_tokens(task: str, root: Path = TASK_TOKENS, model_of: str | None = None) -> Path:
    """One task's fine-tuning examples as BPE ids (the encode_task stage; gpt1/model/task_tokens.py). A task scored
    with another task's models (`model_of`, TaskSpec.model_of: mnli_mm with mnli's) is encoded by that task's job,
    inside its folder: data/task_tokens/mnli/mnli_mm."""
    return Path(root) / model_of / task if model_of else Path(root) / task


def starting_model_record(method: str, records_dir: Path = STARTING_MODELS) -> Path:
    """The record of the weights a method starts from, on which its fine-tuning jobs depend
    (gpt1/train/starting_weights.py)."""
    return Path(records_dir) / f"{method}.json"


FINETUNE = "finetune"  # results/finetune/<method>/<task>/seed<S>


def finetune_runs(task: str, method: str, results: Path = RESULTS, model_of: str | None = None) -> Path:
    """One job of the finetune stage, a (method, task): a folder per seed (`seed_run`). A task scored with another
    task's models (`model_of`: mnli_mm with mnli's) has its runs inside that task's job output:
    results/finetune/full/mnli/mnli_mm/seed<S>."""
    return Path(results) / FINETUNE / method / model_of / task if model_of else Path(results) / FINETUNE / method / task


def layer_transfer_task(task: str, results: Path = RESULTS) -> Path:
    """The layer_transfer stage's output for one task: its runs for every k (`layer_transfer_runs`)."""
    return Path(results) / "layer_transfer" / task


def layer_transfer_runs(task: str, layers: int, results: Path = RESULTS) -> Path:
    """One (task, k) of the layer_transfer stage: `full` with k pretrained blocks, a folder per seed."""
    return layer_transfer_task(task, results) / f"layers{layers}"


def transfer_curve_task(task: str, results: Path = RESULTS) -> Path:
    """The transfer_curve stage's output for one task: its runs for every checkpoint (`transfer_curve_runs`)."""
    return Path(results) / "transfer_curve" / task


def transfer_curve_runs(task: str, step: int, results: Path = RESULTS) -> Path:
    """One (task, checkpoint) of the transfer_curve stage: `full` fine-tuned from pretraining update `step`, a
    folder per seed."""
    return transfer_curve_task(task, results) / f"step{step}"


def training_state(runs: Path, state_root: Path = TRAINING_STATE) -> Path:
    """Where a fine-tuning output folder under RESULTS (a job's, or one of its runs') keeps its state, outside it:
    results/finetune/full/rt_polarity -> data/training_state/finetune/full/rt_polarity."""
    return Path(state_root) / Path(runs).relative_to(RESULTS)


def seed_run(runs: Path, seed: int) -> Path:
    """One seed's folder (predictions, metrics.json, model card) inside a stage's runs folder."""
    return Path(runs) / f"seed{seed}"


def finetune_run(task: str, method: str, seed: int, results: Path = RESULTS, model_of: str | None = None) -> Path:
    return seed_run(finetune_runs(task, method, results, model_of), seed)


def layer_transfer_run(task: str, layers: int, seed: int, results: Path = RESULTS) -> Path:
    return seed_run(layer_transfer_runs(task, layers, results), seed)


def transfer_curve_run(task: str, step: int, seed: int, results: Path = RESULTS) -> Path:
    return seed_run(transfer_curve_runs(task, step, results), seed)


def _file(name: str) -> property:
    return property(lambda self: Path(self.root) / name, doc=f"<root>/{name}")


@dataclass(frozen=True)
class Results:
    """The files the evaluation and analysis stages write, by name, under a results folder (the pipeline's,
    or a test's); each stage reads the ones it needs from here."""
    root: Path = RESULTS
    baselines = _file("baselines.json")
    scores = _file("scores.csv")
    scores_summary = _file("scores_summary.csv")
    evaluation_metrics = _file("metrics.json")
    zero_shot = _file("zero_shot.csv")
    zero_shot_trend = _file("zero_shot_trend.csv")
    zero_shot_plot = _file("zero_shot.png")
    ablation = _file("ablation.csv")
    ablation_std = _file("ablation_std.csv")
    ablation_intervals = _file("ablation_intervals.csv")
    ablation_baselines = _file("ablation_baselines.csv")
    ablation_markdown = _file("ablation.md")
    paper_tables = _file("paper_tables.csv")
    paper_tables_markdown = _file("paper_tables.md")
    layer_transfer = _file("layer_transfer.csv")
    layer_transfer_trend = _file("layer_transfer_trend.csv")
    layer_transfer_plot = _file("layer_transfer.png")
    transfer_curve = _file("transfer_curve.csv")
    transfer_curve_trend = _file("transfer_curve_trend.csv")
    transfer_curve_plot = _file("transfer_curve.png")
