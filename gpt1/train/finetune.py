"""Fine-tuning: every seed of one (task, method), as the paper fine-tunes (Section 3.2, 4.1). This module runs the
job: `run_seeds` (`run_seeds_over` for the Figure 2 and transfer-curve jobs, which vary one setting) and one seed
(`run_seed`), which builds the starting model (gpt1/train/finetune_start.py), trains it (gpt1/train/finetune_loop.py)
and evaluates it and writes its files (gpt1/train/finetune_outputs.py).

The method (one of Table 5's, an entry of params' `methods`) comes resolved by the stage: its starting model, λ and
learning rate travel as one object. `transfer_layers=k` (Figure 2, left) keeps the embeddings and the first k
pretrained blocks and re-initialises the rest; k = n_layer draws nothing and is byte for byte the `full` run.
`pretrain_step=S` (transfer over pretraining) starts from the checkpoint kept after pretraining update S instead of
the final one.

Determinism: the training subsample depends only on the project seed (every method and seed sees the
same examples, so seeds measure training randomness); the run's seed drives initialisation, dropout and
batch order. Output files hold no timings (they go to the log), so a rerun writes identical bytes. A stage's job
runs many (task, method, seed) runs in one process (imports are paid once; a task's tokens are loaded once per
task, gpt1/model/task_tokens.py); each run writes exactly what a process of its own would.

Kept apart too: the model card (gpt1/train/model_card.py) and a seed's saved state, which lets a stopped job resume
and a retry reuse finished seeds (gpt1/train/seed_state.py); and, each for a second user, the training state, one
update and the resume file's round trip (gpt1/train/loop.py, pretraining's too); a model's scores on examples
(gpt1/train/finetune_predict.py, `gpt1 predict`'s too); the record of a method's starting weights
(gpt1/train/starting_weights.py, torch-free, the starting-model stage's too).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from dataclasses import asdict, dataclass, field, replace
from functools import cached_property, partial
from pathlib import Path
from typing import Callable, Literal, Sequence

import torch

from gpt1.errors import UserError
from gpt1.files.digests import sha256_of
from gpt1.layout import RUN_METRICS, seed_run, training_state
from gpt1.methods import ResolvedMethod
from gpt1.model.heads import TaskModel
from gpt1.model.task_checkpoint import TaskRun
from gpt1.model.task_tokens import TaskTokens
from gpt1.model.transforms import EncodedExample
from gpt1.params.roles import keys_with
from gpt1.params.schema import FinetuneParams, Params, TransformerParams
from gpt1.train import precision
from gpt1.train.finetune_loop import train
from gpt1.train.finetune_outputs import evaluate, write_run
from gpt1.train.finetune_start import context_length, language_model, starting_weights
from gpt1.train.interrupt import StopRequest, Stopped
from gpt1.train.model_card import RunCard, model_card
from gpt1.train.seed_state import fingerprint, job_state, seed_state

log = logging.getLogger(__name__)


# --- a job: every seed of one (task, method) -----------------------------------------------------------------

@dataclass(frozen=True)
class FinetuneSettings:
    """What fine-tuning reads from params.yaml: the `finetune` section, the size of a fresh Transformer (`model`:
    no_pretrain starts from one, and its positions are the LSTM's context too) and the project seed the task's
    rows were sampled with (model cards say it)."""
    finetune: FinetuneParams
    fresh_model: TransformerParams
    sample_seed: int

    @classmethod
    def of(cls, params: Params) -> "FinetuneSettings":
        return cls(params.finetune, params.model, params.seed)


def run_seeds_over(axis: Literal["transfer_layers", "pretrain_step"], runs: dict[int, Path],
                   settings: FinetuneSettings, tokens: TaskTokens, method: ResolvedMethod, seeds: Sequence[int], *,
                   pretrain_dir: Path, job: Path, what: str,
                   reproduce: Callable[..., str] | None = None) -> None:
    """The layer-transfer and transfer-curve jobs: `run_seeds` at each value of one of its settings (`axis`), in
    order, into that value's folder (`runs`: {value: runs folder}). One job state (`job_state`, in the state folder
    gpt1/layout.py's `training_state` gives `job`) holds them all, so a stop ends the job after the update in
    progress and its retry goes on from there; `what` names the job in the line a second process for it stops with.
    `reproduce(seed, value=value)`: the command that runs one of them alone."""
    with job_state(training_state(job), f"{what} into {job}") as stop:
        for value, out_root in runs.items():
            run_seeds(settings, tokens, method, seeds, pretrain_dir=pretrain_dir, out_root=out_root,
                      state_root=training_state(out_root), stop=stop, **{axis: value},
                      reproduce=None if reproduce is None else partial(reproduce, value=value))


def run_seeds(settings: FinetuneSettings, tokens: TaskTokens, method: ResolvedMethod, seeds: Sequence[int], *,
              pretrain_dir: Path, out_root: Path, transfer_layers: int | None = None,
              keep_weights_of: Sequence[int] = (), pretrain_step: int | None = None, state_root: Path | None = None,
              stop: StopRequest | None = None, scored_too: Sequence[tuple[TaskTokens, Path]] = (),
              reproduce: Callable[[int], str] | None = None) -> dict[int, dict[str, dict[str, float]]]:
    """Every seed of one (task, method) in this process, from the task's tokens (`TaskTokens.load` of the
    encode_task stage's folder, or gpt1/model/task_encoding.py's `encode_task`). Seed S goes to out_root/seedS, with its fine-tuned
    weights when S is in `keep_weights_of`; returns {seed: metrics}. With `state_root` each seed keeps its state
    there (gpt1/train/seed_state.py), and a stop signal `stop` saw (`job_state`) ends the run after the update in
    progress with that state saved (interrupt.Stopped: a scheduler's retry resumes it).
    `scored_too`: (tokens, runs folder) of each task scored with this task's model (TaskSpec.model_of); seed S of
    it goes to its folder's seedS, from the model seed S trained. `reproduce(S)`: the command line that runs seed S
    alone, for its model card (a stage's one-off; None: the card names the library's call)."""
    loaded = load_task(settings, tokens, pretrain_dir)
    others = [(_scored_with(loaded, other_tokens), Path(other_root)) for other_tokens, other_root in scored_too]
    log.info("%s: seeds %s%s", tokens.task, list(seeds),
             "".join(f"; its models also scored on {other.task}" for other, _ in others))
    metrics = {}
    for seed in seeds:
        if stop is not None and stop.received is not None:  # between seeds: every earlier one is kept
            raise Stopped(f"finetune {tokens.task}: stopped by {stop.received.name} before seed {seed}; the finished "
                          f"seeds are kept in {state_root}: run the stage again to continue")
        run = SeedRun(method, seed, transfer_layers, pretrain_step, save_weights=seed in keep_weights_of,
                      reproduce=None if reproduce is None else reproduce(seed))
        metrics[seed] = run_seed(loaded, run, seed_run(out_root, seed), state_root=state_root,
                                 stop=stop if state_root is not None else None,
                                 scored_too=[(other, seed_run(root, seed)) for other, root in others])
    return metrics


def run(settings: FinetuneSettings, tokens: TaskTokens, method: ResolvedMethod, seed: int, *, pretrain_dir: Path,
        out_dir: Path, transfer_layers: int | None = None, save_weights: bool = False,
        pretrain_step: int | None = None) -> dict[str, dict[str, float]]:
    """Fine-tune and evaluate one (task, method, seed) into `out_dir`; returns {"dev": metrics, "test": metrics}."""
    return run_seed(load_task(settings, tokens, pretrain_dir),
                    SeedRun(method, seed, transfer_layers, pretrain_step, save_weights), Path(out_dir))


@dataclass(frozen=True)
class SeedRun:
    """One run of a job: its method and seed, what Figure 2 or the transfer curve varies (at most one of the two),
    whether its weights are kept, and `reproduce`, the command line that runs it alone, for its model card (None:
    the card names the library's call)."""
    method: ResolvedMethod
    seed: int
    transfer_layers: int | None = None
    pretrain_step: int | None = None
    save_weights: bool = False
    reproduce: str | None = None

    @property
    def name(self) -> str:
        """How logs and errors name it: its method, or the Figure 2 / transfer-curve setting it varies."""
        if self.transfer_layers is not None:
            return f"layers{self.transfer_layers}"
        return self.method.name if self.pretrain_step is None else f"step{self.pretrain_step}"


@dataclass
class LoadedTask:
    """What every seed of a task shares, loaded once per process: seeds differ in the starting model,
    dropout and batch order only, never in the examples or their tokens."""
    settings: FinetuneSettings
    tokens: TaskTokens
    device: torch.device
    pretrain_dir: Path
    _encoded: dict[int, dict[str, list[EncodedExample]]] = field(default_factory=dict, repr=False)

    @property
    def task(self) -> str:
        return self.tokens.task

    _weights_digests: dict[Path, str] = field(default_factory=dict, repr=False)

    @cached_property
    def tokens_digest(self) -> str:
        """The sha256 of the task's tokens (what a seed's fingerprint says of its data)."""
        return tokens_digest(self.tokens)

    def weights_digest(self, path: Path) -> str:
        if path not in self._weights_digests:
            self._weights_digests[path] = sha256_of(path)
        return self._weights_digests[path]

    def encoded(self, n_ctx: int) -> dict[str, list[EncodedExample]]:
        """The splits as input sequences, built on first use: n_ctx comes from the starting model (the same for
        every seed of a method), and building them draws no random numbers, so caching changes nothing."""
        if n_ctx not in self._encoded:
            self._encoded[n_ctx] = self.tokens.encoded(n_ctx)
        return self._encoded[n_ctx]


def load_task(settings: FinetuneSettings, tokens: TaskTokens, pretrain_dir: Path) -> LoadedTask:
    device = precision.resolve_device(settings.finetune.device, key="finetune.device", claim=True)
    precision.announce(device, settings.finetune.dtype, settings.finetune.device, key="finetune.device")
    return LoadedTask(settings=settings, tokens=tokens, pretrain_dir=Path(pretrain_dir), device=device)


def _scored_with(loaded: LoadedTask, tokens: TaskTokens) -> LoadedTask:
    """`tokens`' task, loaded to be scored with `loaded`'s models (on its device): it must read the same
    outputs, the same family and labels."""
    ours, theirs = loaded.tokens.spec, tokens.spec
    if (ours.family, ours.labels) != (theirs.family, theirs.labels) or theirs.model_of != ours.name:
        raise UserError(f"task '{theirs.name}' cannot be scored with {ours.name}'s model: it names "
                        f"{theirs.model_of!r} as its model's task, and its family and labels must be {ours.name}'s")
    return LoadedTask(settings=loaded.settings, tokens=tokens, device=loaded.device,
                    pretrain_dir=loaded.pretrain_dir)


# --- one seed ------------------------------------------------------------------------------------------------

def run_seed(loaded: LoadedTask, run: SeedRun, out_dir: Path, state_root: Path | None = None,
             stop: StopRequest | None = None,
             scored_too: Sequence[tuple[LoadedTask, Path]] = ()) -> dict[str, dict[str, float]]:
    """Fine-tune and evaluate one seed of a loaded task; writes what a process of its own would, byte for byte.
    With `state_root` (gpt1/train/seed_state.py), a seed finished there with the same fingerprint is copied back
    instead of trained, an unfinished one resumes, and SIGTERM (`stop`) saves it after the update in progress.
    `scored_too`: (task, its seed folder) for each task scored with this task's model (TaskSpec.model_of): the
    trained model is evaluated on its dev and test splits too, into a folder of its own (no weights)."""
    settings, tokens, device = loaded.settings, loaded.tokens, loaded.device
    started = time.perf_counter()
    method, seed = run.method, run.seed
    # Reseeding replaces all of the global generator's state (CPU and CUDA), so an earlier seed in the same
    # process leaves nothing behind: init, dropout masks and the head draw from it; batch order from `seed`.
    torch.manual_seed(seed)
    model = language_model(method, tokens.vocab_size, loaded.pretrain_dir, settings.fresh_model, run.transfer_layers,
                           run.pretrain_step)
    n_ctx = context_length(model, settings.fresh_model)
    name = f"{loaded.task}/{run.name}/seed{seed}"
    state = seed_state(state_root, seed, _signature(loaded, run, model, n_ctx, scored_too),
                       settings.finetune.save_interval)
    outputs = [Path(out_dir), *(Path(folder) for _, folder in scored_too)]
    if state is not None and state.restore_finished(outputs):
        log.info("%s: finished before (%s); its files are copied back, not trained again", name, state.folder)
        return json.loads((Path(out_dir) / RUN_METRICS).read_text())
    task_model = TaskModel(model, tokens.spec, settings.finetune.classifier_dropout).to(device)
    encoded = loaded.encoded(n_ctx)
    if task_model.regression:  # never an empty split: gpt1/data/task_data.py checked each when it read the task
        task_model.set_target_scale([example.label for example in encoded["train"]])
    log.info("%s / %s / seed %d: %d train examples, λ = %g, lr %g, %d-token context", loaded.task, method.name,
             seed, len(encoded["train"]), method.lm_coef, method.lr, n_ctx)
    built = time.perf_counter()
    history = train(task_model, encoded["train"], settings.finetune, method, seed, device,
                    label=f"finetune {name}", resume=state, stop=stop)
    trained = time.perf_counter()
    results, predictions = evaluate(task_model, encoded, tokens.spec, settings.finetune, device)
    metrics = {split: results[split]["metrics"] for split in results}
    card = RunCard(task=loaded.task, method=method, seed=seed, transfer_layers=run.transfer_layers,
                   pretrain_step=run.pretrain_step, n_ctx=n_ctx, model_kind=model.kind, model_config=asdict(model.config),
                   parameters=sum(p.numel() for p in task_model.parameters()), history=history, results=results,
                   saved_weights=run.save_weights, precision=precision.describe(device, settings.finetune.dtype),
                   reproduce=run.reproduce)
    weights = (task_model, TaskRun(loaded.task, method.name, seed, n_ctx, tokens.spec)) if run.save_weights else None
    write_run(Path(out_dir), predictions, metrics, model_card(card, settings.finetune, settings.sample_seed, tokens),
              weights)
    for other, folder in scored_too:
        _write_scored(task_model, other, card, Path(folder))
    if state is not None:
        state.keep_finished(outputs)
    log.info("%s / %s / seed %d: test %s; seconds: %.1f model (and encoding, first seed), %.1f training, "
             "%.1f evaluating", loaded.task, method.name, seed, metrics["test"], built - started, trained - built,
             time.perf_counter() - trained)
    return metrics


def _signature(loaded: LoadedTask, run: SeedRun, model, n_ctx: int,
               scored_too: Sequence[tuple[LoadedTask, Path]] = ()) -> str:
    """The fingerprint of one seed: every input that shapes its files (`fingerprint`), its card's command too."""
    settings = loaded.settings.finetune
    weights = starting_weights(run.method, loaded.pretrain_dir, run.pretrain_step)
    return fingerprint({
        "finetune": {key: getattr(settings, key) for key in keys_with(type(settings), lambda role: role.resume)},
        "sample_seed": loaded.settings.sample_seed,
        "method": asdict(run.method), "seed": run.seed,
        "transfer_layers": run.transfer_layers, "pretrain_step": run.pretrain_step, "save_weights": run.save_weights,
        "model": asdict(model.config), "n_ctx": n_ctx, "reproduce": run.reproduce,
        "starting_weights": None if weights is None else loaded.weights_digest(weights),
        "tokens": loaded.tokens_digest, "scored_too": [other.tokens_digest for other, _ in scored_too]})


def tokens_digest(tokens: TaskTokens) -> str:
    digest = hashlib.sha256(json.dumps([tokens.task, tokens.spec.to_json(), tokens.full_sizes, tokens.vocab_size,
                                        asdict(tokens.special)], sort_keys=True).encode())
    for split, tokenized in sorted(tokens.splits.items()):
        digest.update(json.dumps([split, tokenized.texts, tokenized.labels]).encode())
    return digest.hexdigest()


# --- another task scored with its model -----------------------------------------------------------------------

def _write_scored(task_model: TaskModel, other: LoadedTask, card: RunCard, out_dir: Path) -> None:
    """Another task's run folder from this run's model (`other` is scored with it, TaskSpec.model_of): its dev and
    test predictions, metrics and run card, as a run of its own would lay them out; no weights (they are the
    training task's)."""
    results, predictions = evaluate(task_model, other.encoded(card.n_ctx), other.tokens.spec, other.settings.finetune,
                                    other.device)
    scored = replace(card, task=other.task, results=results, saved_weights=False, model_of=card.task)
    write_run(out_dir, predictions, {split: results[split]["metrics"] for split in results},
              model_card(scored, other.settings.finetune, other.settings.sample_seed, other.tokens), None)
