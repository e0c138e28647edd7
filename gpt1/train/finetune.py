"""Fine-tuning: every seed of one (task, method), as the paper fine-tunes (Section 3.2, 4.1), from its starting
model to the files it writes. Read top to bottom: a job (`run_seeds`; `run_seeds_over` for the Figure 2 and
transfer-curve jobs, which vary one setting), one seed (`run_seed`), its starting model, its training, and its
evaluation and files (predictions, metrics, model card, weights).

AdamW (decay only on >= 2-D weights), linear warmup over `warmup_fraction` of the updates then linear
decay to 0, gradient clipping, classifier dropout, L3 = L2 + λ·L1. The method (one of Table 5's, an entry of params' `methods`)
comes resolved by the stage: its starting model, λ and learning rate travel as one object.
`transfer_layers=k` (Figure 2, left) keeps the embeddings and the first k pretrained blocks and
re-initialises the rest; k = n_layer draws nothing and is byte for byte the `full` run. `pretrain_step=S`
(transfer over pretraining) starts from the checkpoint kept after pretraining update S instead of the final one.

Determinism: the training subsample depends only on the project seed (every method and seed sees the
same examples, so seeds measure training randomness); the run's seed drives initialisation, dropout and
batch order. Output files hold no timings (they go to the log), so a rerun writes identical bytes. A stage's job
runs many (task, method, seed) runs in one process (imports are paid once; a task's tokens are loaded once per
task, gpt1/model/task_tokens.py); each run writes exactly what a process of its own would.

Kept apart: the model card (gpt1/train/model_card.py) and a seed's saved state, which lets a stopped job resume
and a retry reuse finished seeds (gpt1/train/seed_state.py); and, each for a second user, the training state, one
update and the resume file's round trip (gpt1/train/loop.py, pretraining's too); a model's scores on examples
(gpt1/train/finetune_predict.py, `gpt1 predict`'s too); the record of a method's starting weights
(gpt1/train/starting_weights.py, torch-free, the starting-model stage's too).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import time
from dataclasses import asdict, dataclass, field, replace
from functools import cached_property, partial
from pathlib import Path
from typing import Callable, Literal, Sequence

import torch
from tqdm import tqdm

from gpt1.errors import UserError
from gpt1.eval.metrics import score
from gpt1.files.atomic import atomic_directory
from gpt1.files.digests import sha256_of
from gpt1.kinds import TRANSFORMER
from gpt1.layout import (RUN_CARD, RUN_METRICS, RUN_WEIGHTS, kept_checkpoints, pretrained_model, pretraining_checkpoint,
                         run_predictions, seed_run, training_state)
from gpt1.methods import ResolvedMethod
from gpt1.model.heads import Batch, TaskModel, collate
from gpt1.model.lm import GPT1, LanguageModel, build_model, load_model
from gpt1.model.task_checkpoint import TaskRun, save_task_model
from gpt1.model.task_tokens import TaskTokens
from gpt1.model.transforms import EncodedExample
from gpt1.params.roles import keys_with
from gpt1.params.schema import FinetuneParams, Params, TransformerParams
from gpt1.train import distributed, precision
from gpt1.train.finetune_predict import EVAL_BATCH_SIZE, predict, prediction_rows  # noqa: F401 (named here too)
from gpt1.train.interrupt import StopRequest, Stopped
from gpt1.train.loop import TrainingState, load_state, save_state
from gpt1.train.lr_schedules import warmup_linear
from gpt1.train.model_card import RunCard, model_card
from gpt1.train.model_configs import model_config
from gpt1.train.seed_state import SeedState, fingerprint, job_state, seed_state

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
    prepared = prepare(settings, tokens, pretrain_dir)
    others = [(_scored_with(prepared, other_tokens), Path(other_root)) for other_tokens, other_root in scored_too]
    log.info("%s: seeds %s%s", tokens.task, list(seeds),
             "".join(f"; its models also scored on {other.task}" for other, _ in others))
    metrics = {}
    for seed in seeds:
        if stop is not None and stop.received is not None:  # between seeds: every earlier one is kept
            raise Stopped(f"finetune {tokens.task}: stopped by {stop.received.name} before seed {seed}; the finished "
                          f"seeds are kept in {state_root}: run the stage again to continue")
        metrics[seed] = run_seed(prepared, method, seed, seed_run(out_root, seed), transfer_layers,
                                 save_weights=seed in keep_weights_of, pretrain_step=pretrain_step,
                                 state_root=state_root, stop=stop if state_root is not None else None,
                                 scored_too=[(other, seed_run(root, seed)) for other, root in others],
                                 reproduce=None if reproduce is None else reproduce(seed))
    return metrics


def run(settings: FinetuneSettings, tokens: TaskTokens, method: ResolvedMethod, seed: int, *, pretrain_dir: Path,
        out_dir: Path, transfer_layers: int | None = None, save_weights: bool = False,
        pretrain_step: int | None = None) -> dict[str, dict[str, float]]:
    """Fine-tune and evaluate one (task, method, seed) into `out_dir`; returns {"dev": metrics, "test": metrics}."""
    return run_seed(prepare(settings, tokens, pretrain_dir), method, seed, Path(out_dir), transfer_layers,
                    save_weights, pretrain_step)


@dataclass
class Prepared:
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


def prepare(settings: FinetuneSettings, tokens: TaskTokens, pretrain_dir: Path) -> Prepared:
    device = precision.resolve_device(settings.finetune.device, key="finetune.device", claim=True)
    precision.announce(device, settings.finetune.dtype, settings.finetune.device, key="finetune.device")
    return Prepared(settings=settings, tokens=tokens, pretrain_dir=Path(pretrain_dir), device=device)


def _scored_with(prepared: Prepared, tokens: TaskTokens) -> Prepared:
    """`tokens`' task, prepared to be scored with `prepared`'s models (on its device): it must read the same
    outputs, the same family and labels."""
    ours, theirs = prepared.tokens.spec, tokens.spec
    if (ours.family, ours.labels) != (theirs.family, theirs.labels) or theirs.model_of != ours.name:
        raise UserError(f"task '{theirs.name}' cannot be scored with {ours.name}'s model: it names "
                        f"{theirs.model_of!r} as its model's task, and its family and labels must be {ours.name}'s")
    return Prepared(settings=prepared.settings, tokens=tokens, device=prepared.device,
                    pretrain_dir=prepared.pretrain_dir)


# --- one seed ------------------------------------------------------------------------------------------------

def run_seed(prepared: Prepared, method: ResolvedMethod, seed: int, out_dir: Path, transfer_layers: int | None = None,
             save_weights: bool = False, pretrain_step: int | None = None, state_root: Path | None = None,
             stop: StopRequest | None = None, scored_too: Sequence[tuple[Prepared, Path]] = (),
             reproduce: str | None = None) -> dict[str, dict[str, float]]:
    """Fine-tune and evaluate one seed of a prepared task; writes what a process of its own would, byte for byte.
    With `state_root` (gpt1/train/seed_state.py), a seed finished there with the same fingerprint is copied back
    instead of trained, an unfinished one resumes, and SIGTERM (`stop`) saves it after the update in progress.
    `scored_too`: (task, its seed folder) for each task scored with this task's model (TaskSpec.model_of): the
    trained model is evaluated on its dev and test splits too, into a folder of its own (no weights). `reproduce`:
    the command line that runs this seed alone, for its model card (None: the card names the library's call)."""
    settings, tokens, device = prepared.settings, prepared.tokens, prepared.device
    started = time.perf_counter()
    # Reseeding replaces all of the global generator's state (CPU and CUDA), so an earlier seed in the same
    # process leaves nothing behind: init, dropout masks and the head draw from it; batch order from `seed`.
    torch.manual_seed(seed)
    model = language_model(method, tokens.vocab_size, prepared.pretrain_dir, settings.fresh_model, transfer_layers,
                           pretrain_step)
    n_ctx = context_length(model, settings.fresh_model)
    name = f"{prepared.task}/{run_name(method.name, transfer_layers, pretrain_step)}/seed{seed}"
    state = seed_state(state_root, seed, _signature(prepared, method, seed, model, n_ctx, transfer_layers,
                                                     pretrain_step, save_weights, scored_too, reproduce),
                       settings.finetune.save_interval)
    outputs = [Path(out_dir), *(Path(folder) for _, folder in scored_too)]
    if state is not None and state.restore_finished(outputs):
        log.info("%s: finished before (%s); its files are copied back, not trained again", name, state.folder)
        return json.loads((Path(out_dir) / RUN_METRICS).read_text())
    task_model = TaskModel(model, tokens.spec, settings.finetune.classifier_dropout).to(device)
    encoded = prepared.encoded(n_ctx)
    if task_model.regression:  # never an empty split: gpt1/data/task_data.py checked each when it read the task
        task_model.set_target_scale([example.label for example in encoded["train"]])
    log.info("%s / %s / seed %d: %d train examples, λ = %g, lr %g, %d-token context", prepared.task, method.name,
             seed, len(encoded["train"]), method.lm_coef, method.lr, n_ctx)
    built = time.perf_counter()
    history = train(task_model, encoded["train"], settings.finetune, method, seed, device,
                    label=f"finetune {name}", resume=state, stop=stop)
    trained = time.perf_counter()
    results, predictions = _evaluate(task_model, encoded, prepared)
    metrics = {split: results[split]["metrics"] for split in results}
    card = RunCard(task=prepared.task, method=method, seed=seed, transfer_layers=transfer_layers,
                   pretrain_step=pretrain_step, n_ctx=n_ctx, model_kind=model.kind, model_config=asdict(model.config),
                   parameters=sum(p.numel() for p in task_model.parameters()), history=history, results=results,
                   saved_weights=save_weights, precision=precision.describe(device, settings.finetune.dtype),
                   reproduce=reproduce)
    weights = (task_model, TaskRun(prepared.task, method.name, seed, n_ctx, tokens.spec)) if save_weights else None
    _write(Path(out_dir), predictions, metrics, model_card(card, settings.finetune, settings.sample_seed, tokens),
           weights)
    for other, folder in scored_too:
        _write_scored(task_model, other, card, Path(folder))
    if state is not None:
        state.keep_finished(outputs)
    log.info("%s / %s / seed %d: test %s; seconds: %.1f model (and encoding, first seed), %.1f training, "
             "%.1f evaluating", prepared.task, method.name, seed, metrics["test"], built - started, trained - built,
             time.perf_counter() - trained)
    return metrics


def run_name(method: str, transfer_layers: int | None, pretrain_step: int | None) -> str:
    """How logs and errors name a run: its method, or the Figure 2 / transfer-curve setting it varies."""
    if transfer_layers is not None:
        return f"layers{transfer_layers}"
    return method if pretrain_step is None else f"step{pretrain_step}"


def _signature(prepared: Prepared, method: ResolvedMethod, seed: int, model, n_ctx: int, transfer_layers: int | None,
               pretrain_step: int | None, save_weights: bool, scored_too: Sequence[tuple[Prepared, Path]] = (),
               reproduce: str | None = None) -> str:
    """The fingerprint of one seed: every input that shapes its files (`fingerprint`), its card's command too."""
    settings = prepared.settings.finetune
    weights = starting_weights(method, prepared.pretrain_dir, pretrain_step)
    return fingerprint({
        "finetune": {key: getattr(settings, key) for key in keys_with(type(settings), lambda role: role.resume)},
        "sample_seed": prepared.settings.sample_seed,
        "method": asdict(method), "seed": seed,
        "transfer_layers": transfer_layers, "pretrain_step": pretrain_step, "save_weights": save_weights,
        "model": asdict(model.config), "n_ctx": n_ctx, "reproduce": reproduce,
        "starting_weights": None if weights is None else prepared.weights_digest(weights),
        "tokens": prepared.tokens_digest, "scored_too": [other.tokens_digest for other, _ in scored_too]})


def tokens_digest(tokens: TaskTokens) -> str:
    digest = hashlib.sha256(json.dumps([tokens.task, tokens.spec.to_json(), tokens.full_sizes, tokens.vocab_size,
                                        asdict(tokens.special)], sort_keys=True).encode())
    for split, tokenized in sorted(tokens.splits.items()):
        digest.update(json.dumps([split, tokenized.texts, tokenized.labels]).encode())
    return digest.hexdigest()


# --- its starting model: the method's (Table 5), some blocks re-initialised (Figure 2, left), or an earlier
# pretraining checkpoint (the transfer curve). Building a model draws from the global torch RNG: seed it first.

def language_model(method: ResolvedMethod, vocab_size: int, pretrain_dir: Path, fresh: TransformerParams,
                   transfer_layers: int | None = None, pretrain_step: int | None = None) -> LanguageModel:
    """The method's starting model: its final pretrained weights or, with
    `pretrain_step`, the checkpoint kept after that update; a method with no pretrained model gets a fresh
    Transformer sized by `fresh` (params' `model` section). Uses the global torch RNG: seed it first."""
    starts_from = method.starts_from
    if starts_from is None:
        if transfer_layers is not None or pretrain_step is not None:
            raise UserError(f"transfer_layers and pretrain_step need pretrained weights; {method.name!r} starts from "
                            "random weights")
        return build_model(TRANSFORMER, model_config(fresh, vocab_size))
    model = pretrained(starting_weights(method, pretrain_dir, pretrain_step), vocab_size)
    if transfer_layers is not None:
        if starts_from != TRANSFORMER:
            raise UserError(f"transfer_layers applies to methods that start from the pretrained Transformer, "
                            f"not {method.name!r}")
        reinitialise_blocks(model, transfer_layers)
    return model


def starting_weights(method: ResolvedMethod, pretrain_dir: Path, pretrain_step: int | None = None) -> Path | None:
    """The file of pretrained weights a run of `method` loads (with `pretrain_step`, the checkpoint kept after that
    update); None for a method that starts from random weights."""
    if method.starts_from is None:
        return None
    return pretrained_model(method.starts_from, pretrain_dir) if pretrain_step is None \
        else checkpoint_path(method.starts_from, pretrain_step, pretrain_dir)


def checkpoint_path(kind: str, step: int, pretrain_dir: Path) -> Path:
    """The kept checkpoint after pretraining update `step`, or one error naming the steps that were kept."""
    path = pretraining_checkpoint(kind, step, pretrain_dir)
    if not path.is_file():
        kept = sorted(kept_checkpoints(path.parent))
        raise UserError(f"{path} not found: the {kind} pretraining kept checkpoints after updates {kept} "
                        "(pretrain.checkpoints, log-spaced); choose one of them")
    return path


def pretrained(path: Path, vocab_size: int) -> LanguageModel:
    model = load_model(path)
    have = model.config.vocab_size
    if have > vocab_size:
        raise UserError(f"{path} has {have} token embeddings but data/bpe has {vocab_size} tokens; "
                        "pretrain with the current BPE")
    if have < vocab_size:  # start / delimiter / extract are new, learned embeddings
        model.resize_token_embeddings(vocab_size)
    return model


def reinitialise_blocks(model: GPT1, keep: int) -> None:
    """Figure 2: keep embeddings and blocks [0, keep); blocks [keep, n_layer) get a fresh initialisation."""
    if not 0 <= keep <= model.config.n_layer:
        raise UserError(f"transfer_layers {keep} is outside 0..{model.config.n_layer} (the model's layers)")
    if keep == model.config.n_layer:
        # Building a fresh model would draw from the global RNG and shift the head's init and dropout:
        # keeping every block must be the `full` run exactly, which Figure 2 reuses as its k = n_layer point.
        return
    fresh = GPT1(model.config)
    for index in range(keep, model.config.n_layer):
        model.h[index].load_state_dict(fresh.h[index].state_dict())


def context_length(model: LanguageModel, transformer: TransformerParams) -> int:
    """The Transformer's positions; the LSTM gets the inputs of the Transformer it is compared with (params'
    `model` section: read only for the LSTM, so the stages that fine-tune only the Transformer do not depend on it)."""
    return model.config.n_positions if model.kind == TRANSFORMER else transformer.n_positions


# --- its training: the paper's loop over the task's training examples, resumable. Batch order comes from the
# run's seed, drawn at each epoch's start; with a seed's state (`SeedState`) the loop saves and resumes
# everything it needs to end as a run never stopped.

def train(task_model: TaskModel, examples: Sequence[EncodedExample], settings: FinetuneParams,
          method: ResolvedMethod, seed: int, device: torch.device, label: str = "fine-tuning",
          resume: SeedState | None = None, stop: StopRequest | None = None) -> list[dict[str, float]]:
    """Fine-tune in place with params' `finetune` section at `method`'s rate and λ; returns mean losses per epoch
    (L3, L2, L1). A non-finite loss stops it with one line naming `label` and the params key the rate came from
    (loop.Diverged). With `resume`, it continues from that seed's saved state where one matches, saves it every
    finetune.save_interval updates and, when `stop` has seen SIGTERM, after the update in progress (then raises
    interrupt.Stopped); saving reads the RNG states and draws nothing, so the run ends as one never stopped."""
    per_epoch = math.ceil(len(examples) / settings.batch_size)
    total = per_epoch * settings.epochs
    warmup = math.ceil(settings.warmup_fraction * total)
    save_interval = settings.save_interval
    state = TrainingState.start(task_model, task_model.parameter_groups(settings.weight_decay), method.lr,
                                settings.betas, settings.eps, lambda step: warmup_linear(step, total, warmup),
                                label=label, knobs=f"{method.rate_key} (or finetune.grad_clip)")
    autocast = precision.autocast(device, settings.dtype, many_shapes=True)
    generator = torch.Generator().manual_seed(seed)
    runtime = distributed.Runtime(rank=0, world_size=1, local_rank=0, device=device)
    saved = _resume(state, resume, generator, runtime)
    order, sums = (saved["order"].tolist(), saved["sums"]) if saved and state.position % per_epoch else (None, None)

    def losses_of(indices: list[int]):
        return batch_losses(task_model, collate([examples[i] for i in indices], task_model.regression).to(device),
                            method.lm_coef)

    def save() -> None:
        extra = {"generator": generator.get_state(), "order": torch.tensor(order), "sums": sums}
        save_state(state, resume.resume_file, resume.signature, runtime, extra)

    task_model.train()
    progress = tqdm(total=total, initial=state.position, desc="fine-tune", unit="update", disable=None)
    for epoch in range(state.position // per_epoch, settings.epochs):
        if order is None:  # the epoch's batch order, drawn at its start (a resumed epoch keeps the one it drew)
            order = torch.randperm(len(examples), generator=generator).tolist()
            sums = {"loss": 0.0, "task_loss": 0.0, "lm_loss": 0.0}
        batches = [order[start:start + settings.batch_size] for start in range(0, len(order), settings.batch_size)]
        for indices in batches[state.position % per_epoch:]:
            losses, _ = state.update([lambda: losses_of(indices)], settings.grad_clip, autocast=autocast)
            state.position += 1
            for name, value in zip(sums, losses.tolist()):
                sums[name] += value
            progress.update()
            if state.position % per_epoch == 0:
                state.history.append({name: round(value / per_epoch, 4) for name, value in sums.items()})
                log.info("epoch %d: %s", epoch + 1, state.history[-1])
            if resume is not None and state.position < total:
                if stop is not None and stop.requested(runtime):
                    save()
                    progress.close()
                    raise Stopped(f"{label}: stopped by {stop.received.name} after update {state.position} of {total}; "
                                  f"its resume state is saved in {resume.resume_file}: run the stage again to "
                                  "continue from there")
                if state.position % save_interval == 0:
                    save()
        order = None
    progress.close()
    return state.history


def batch_losses(task_model: TaskModel, batch: Batch, lm_coef: float) -> tuple[torch.Tensor, ...]:
    """(L3, L2, L1) of one batch. Where λ = 0 skips the LM, L1 is a zero made from L2, so it sits on the
    model's device in L2's dtype: the update stacks the three (a CPU zero beside CUDA losses fails there)."""
    loss, task_loss, language_loss = task_model.loss(batch, lm_coef)
    return loss, task_loss, language_loss if language_loss is not None else torch.zeros_like(task_loss)


def _resume(state: TrainingState, resume: SeedState | None, generator: torch.Generator,
            runtime: distributed.Runtime) -> dict | None:
    """Restore the seed's saved state into `state` and `generator` where one was written with this fingerprint;
    returns what else it saved (the epoch's batch order and loss sums), or None to start at update 0."""
    if resume is None:
        return None
    saved, status = load_state(resume.resume_file, resume.signature)
    if saved is None:
        if status == "foreign":  # ours, written for other settings or code: it can never be resumed
            resume.resume_file.unlink(missing_ok=True)
        return None
    state.restore(saved, runtime)
    generator.set_state(saved["extra"]["generator"])
    log.info("%s: resuming from %s at update %d", state.label, resume.resume_file, state.position)
    return saved["extra"]


# --- its evaluation and files ----------------------------------------------------------------------------------

def _evaluate(task_model: TaskModel, encoded: dict[str, list[EncodedExample]], prepared: Prepared):
    """Predictions and scores on dev and test: ({split: {"metrics", "notes"}}, {split: rows})."""
    settings = prepared.settings.finetune
    results, predictions = {}, {}
    for split in ("dev", "test"):
        outputs = predict(task_model, encoded[split], max(settings.batch_size, EVAL_BATCH_SIZE), prepared.device,
                          settings.dtype)
        predictions[split] = prediction_rows(outputs, encoded[split], task_model.regression)
        scored = score(prepared.tokens.spec, [row["label"] for row in predictions[split]],
                       [row["prediction"] for row in predictions[split]])
        results[split] = {"metrics": scored.values, "notes": list(scored.notes)}
    return results, predictions


def _write(out_dir: Path, predictions: dict[str, list[dict]], metrics: dict, card: str,
           weights: tuple[TaskModel, TaskRun] | None) -> None:
    """The run's folder, whole or not at all (an interrupted multi-seed run leaves complete seeds only)."""
    with atomic_directory(out_dir) as staging:
        for split, rows in predictions.items():
            (staging / run_predictions(split)).write_text("".join(strict_json(r) + "\n" for r in rows))
        (staging / RUN_METRICS).write_text(strict_json(metrics, indent=2, sort_keys=True) + "\n")
        (staging / RUN_CARD).write_text(card)
        if weights is not None:
            save_task_model(*weights, staging / RUN_WEIGHTS)


def _write_scored(task_model: TaskModel, other: Prepared, card: RunCard, out_dir: Path) -> None:
    """Another task's run folder from this run's model (`other` is scored with it, TaskSpec.model_of): its dev and
    test predictions, metrics and run card, as a run of its own would lay them out; no weights (they are the
    training task's)."""
    results, predictions = _evaluate(task_model, other.encoded(card.n_ctx), other)
    scored = replace(card, task=other.task, results=results, saved_weights=False, model_of=card.task)
    _write(out_dir, predictions, {split: results[split]["metrics"] for split in results},
           model_card(scored, other.settings.finetune, other.settings.sample_seed, other.tokens), None)


def strict_json(value, **options) -> str:
    """JSON as the standard has it: a NaN or infinity (a model that broke in evaluation) stops the run instead of
    writing a bare NaN that no JSON reader accepts."""
    try:
        return json.dumps(value, allow_nan=False, **options)
    except ValueError:
        raise UserError("a prediction or metric is not a finite number (the model's outputs overflowed); nothing "
                        "was written for this run: lower finetune.lr or use finetune.dtype float32") from None
