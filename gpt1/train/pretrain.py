"""Pretraining: the Transformer or the LSTM baseline trained as a language model on the token corpus (for the
`pretrain` stage, gpt1/stages/pretrain.py).

The paper's recipe: Adam (0.9, 0.999, 1e-8), linear warmup then cosine annealing to 0, global gradient-norm
clip 1, the "modified L2" (decoupled weight decay on >= 2-D weights only: AdamW with parameter_groups),
minibatches of contiguous windows of model.n_positions tokens (for the LSTM too). A batch of
`tokens_per_update` tokens is split over processes (torchrun) and gradient accumulation. Outputs (only rank 0
writes):

    <out>/model.safetensors                 the final weights (save_model format)
    <out>/checkpoints/step_<N>.safetensors  log-spaced steps 1 ... max_steps, for the zero-shot analysis
    <metrics>/metrics.json, <metrics>/plots/metrics/{train,val}/*.tsv   DVCLive
    <out>/resume.pt, <out>/resume-checkpoints/   work in progress, removed once the run completes

Never lose work: every `save_interval` updates, resume.pt (model, optimiser, scheduler, every rank's RNG
states, data position, metric history) is replaced atomically; a new run with the same settings resumes
from it and ends with the same weights, bit for bit, as a run that was never interrupted. Declare only
model.safetensors and checkpoints/ as outputs: DVC and Snakemake delete outputs before re-running a stage.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.nn.parallel import DistributedDataParallel
from tqdm import tqdm

from gpt1.train import distributed, precision
from gpt1.train.flops import flops_per_token, gpu_peak, model_flops_utilisation
from gpt1.files.atomic import atomic_directory, link_or_copy, remove_stale_temporaries
from gpt1.train.batches import WindowSampler, evaluation_starts, unigram_perplexity, windows_to_batch
from gpt1.train.pretrain_settings import Kind, PretrainSettings, batch_split, run_signature
from gpt1.train.distributed import seed_everything
from gpt1.train.interrupt import StopRequest, Stopped
from gpt1.train.loop import TrainingState, load_state, save_state, set_aside
from gpt1.layout import CHECKPOINTS, MODEL_FILE, checkpoint_file, kept_checkpoints
from gpt1.train.lr_schedules import warmup_cosine
from gpt1.train.model_configs import model_config
from gpt1.model.weights import initial_weights
from gpt1.files.tokens_meta import load_tokens
from gpt1.errors import UserError
from gpt1.kinds import TRANSFORMER
from gpt1.model.lm import LanguageModel, TransformerConfig, build_model, save_model

log = logging.getLogger(__name__)
RESUME_FILE = "resume.pt"
STAGING_DIR = "resume-checkpoints"
LOCK_FILE = "pretrain.lock"


# ---- evaluation --------------------------------------------------------------------------------------

@torch.no_grad()
def evaluate(model: LanguageModel, tokens: np.ndarray, starts: np.ndarray, length: int, batch_size: int,
             runtime: distributed.Runtime, autocast: contextlib.AbstractContextManager) -> float:
    """Mean next-token loss over the fixed evaluation windows; the windows are shared out over ranks."""
    was_training = model.training
    model.eval()
    totals = torch.zeros(2, dtype=torch.float64, device=runtime.device)  # loss sum, token count
    mine = starts[runtime.rank::runtime.world_size]
    for first in range(0, len(mine), batch_size):
        inputs, targets = windows_to_batch(tokens, mine[first:first + batch_size], length)
        with autocast:
            loss = model(inputs.to(runtime.device), targets.to(runtime.device))
        totals[0] += loss.double() * targets.numel()
        totals[1] += targets.numel()
    distributed.all_reduce_sum(totals, runtime)
    model.train(was_training)
    return (totals[0] / totals[1]).item()


# ---- the training run --------------------------------------------------------------------------------

class Trainer:
    def __init__(self, settings: PretrainSettings, kind: Kind, tokens_dir: Path, out_dir: Path, metrics_dir: Path,
                 runtime: distributed.Runtime):
        self.p, self.kind, self.runtime, self.schedule = settings.pretrain, kind, runtime, settings.schedule
        self.out_dir, self.metrics_dir = out_dir, metrics_dir
        self.length, self.max_steps = settings.n_positions, self.schedule.updates
        self.micro_batch, self.accumulation = batch_split(self.p, self.length, runtime.world_size)
        if not (tokens_dir / "meta.json").is_file():
            raise UserError(f"{tokens_dir / 'meta.json'} not found; run the tokenize stage first")
        vocab_size = json.loads((tokens_dir / "meta.json").read_text())["vocab_size"]
        self.train_tokens, self.val_tokens = load_tokens(tokens_dir, "train"), load_tokens(tokens_dir, "val")
        deterministic = self.p.deterministic  # read on every device: DVC re-runs the stage when it changes
        if runtime.device.type == "cuda":
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.backends.cudnn.allow_tf32 = True
            torch.use_deterministic_algorithms(deterministic, warn_only=True)
        self.config = model_config(settings.size, vocab_size)
        torch.manual_seed(settings.seed)  # the same initial weights on every rank
        self.model = build_model(kind, self.config)
        if kind == TRANSFORMER and self.p.init_from:
            self.model = initial_weights(Path(self.p.init_from), self.config).train()
            log.info("starting from %s (%d parameters)", self.p.init_from, self.model.num_parameters())
        self.model = self.model.to(runtime.device)
        self.model.lm_loss_kind = self.p.lm_loss
        self.device_choice = precision.announce(runtime.device, self.p.dtype, self.p.device, key="pretrain.device")
        self.peak = gpu_peak(torch.cuda.get_device_name(runtime.device), "bf16" if precision.uses_bf16(
            runtime.device, self.p.dtype) else "tf32") if runtime.device.type == "cuda" else None
        if self.peak is not None and runtime.is_main:
            log.info("train/mfu is taken against the %s peak, %.1f TFLOP/s", self.peak.name, self.peak.flops / 1e12)
        self.state = TrainingState.start(
            self.model, self.model.parameter_groups(self.p.weight_decay), getattr(self.p, kind).max_lr,
            self.p.betas, self.p.eps, lambda step: warmup_cosine(step, self.schedule.warmup_updates, self.max_steps),
            label=f"pretrain {kind}", knobs=f"pretrain.{kind}.max_lr (or pretrain.grad_clip); the last saved state "
            f"stays in {out_dir / RESUME_FILE}")
        seed_everything(settings.seed, runtime.rank)
        self.sampler = WindowSampler(self.train_tokens, self.length, settings.seed)
        self.eval_starts = evaluation_starts(self.val_tokens, self.length, self.p.eval_tokens)
        self.unigram = unigram_perplexity(self.train_tokens, self.val_tokens, self.eval_starts, self.length,
                                          vocab_size)
        self.autocast = precision.autocast(runtime.device, self.p.dtype)
        self.signature = run_signature(settings, kind, self.config, len(self.train_tokens))
        self.resume_path, self.staging = out_dir / RESUME_FILE, out_dir / STAGING_DIR
        self.resumed_from = self._resume()
        # DDP wraps the model before compilation, as PyTorch advises: the compiled graph then breaks at DDP's
        # buckets, so their all-reduces overlap the rest of the backward.
        wrapped = DistributedDataParallel(self.model, device_ids=[runtime.device.index]
                                          if runtime.device.type == "cuda" else None) if runtime.distributed else self.model
        self.train_model = torch.compile(wrapped) if self.p.compile else wrapped
        if self.p.compile and runtime.is_main:
            log.info("training through torch.compile (%s): the first updates include the compilation",
                     "of the DDP-wrapped model" if runtime.distributed else "of the model")

    def _resume(self) -> int:
        saved, status = load_state(self.resume_path, self.signature)
        if saved is None:
            if self.runtime.is_main:  # checkpoints of an abandoned run must not mix with this one's
                if status == "unreadable":  # kept beside the state it belongs to, which load_state set aside
                    set_aside(self.staging)
                shutil.rmtree(self.staging, ignore_errors=True)
                if status == "foreign":  # ours, written with other settings: it can never be resumed
                    self.resume_path.unlink(missing_ok=True)
            distributed.barrier(self.runtime)
            return 0
        self.state.restore(saved, self.runtime)
        log.info("resuming %s pretraining from %s at update %d", self.kind, self.resume_path, self.state.step)
        return self.state.step

    def _micro_batches(self) -> list:
        """This rank's share of the next update. Sequence numbers are global: rank r takes micro-batches
        r*A .. r*A + A - 1 of the update, so the update sees the same sequences whatever the number of processes."""
        micro, device = self.micro_batch, self.runtime.device

        def loss_of(first: int):
            inputs, targets = self.sampler.batch(first, micro)
            return (self.train_model(inputs.to(device), targets.to(device)),)

        first = self.state.position + self.runtime.rank * self.accumulation * micro
        return [lambda first=first + index * micro: loss_of(first) for index in range(self.accumulation)]

    def _update(self) -> tuple[float, float]:
        """One optimiser update over the global batch; returns (mean loss over all ranks, grad norm)."""
        no_sync = self.train_model.no_sync if self.runtime.distributed else None
        losses, grad_norm = self.state.update(self._micro_batches(), self.p.grad_clip, no_sync, self.autocast)
        self.state.position += self.micro_batch * self.accumulation * self.runtime.world_size
        mean_loss = distributed.all_reduce_sum(losses[0], self.runtime) / self.runtime.world_size
        return mean_loss.item(), grad_norm

    def _flops_per_token(self) -> float:
        if isinstance(self.config, TransformerConfig):
            return flops_per_token(self.model.num_parameters(), self.config.n_layer, self.config.d_model, self.length)
        return 6.0 * self.model.num_parameters()

    def _evaluate(self) -> float:
        return evaluate(self.model, self.val_tokens, self.eval_starts, self.length, self.p.micro_batch_size,
                        self.runtime, self.autocast)

    def train(self) -> dict[str, Any]:
        from dvclive import Live

        main, state = self.runtime.is_main, self.state
        live = Live(dir=str(self.metrics_dir), save_dvc_exp=False, dvcyaml=None) if main else None
        for entry in state.history:  # a resumed run rewrites the curves it had logged before the interruption
            _log_step(live, entry)
        if main:
            log.info("%s: %d parameters, %d update(s) of %d tokens (%d process(es) x %d micro-batch(es) of %d), "
                     "unigram validation perplexity %.1f", self.kind, self.model.num_parameters(), self.max_steps,
                     self.p.tokens_per_update, self.runtime.world_size, self.accumulation,
                     self.micro_batch, self.unigram)
        self.model.train()
        progress = tqdm(total=self.max_steps, initial=state.step, desc=f"pretrain {self.kind}", unit="update",
                        disable=None if main else True)
        train_seconds = 0.0
        with StopRequest() as stop:  # SIGTERM: finish this update, save the resume state, exit to be retried
            while state.step < self.max_steps:
                entry, seconds = self._train_one_update(live)
                train_seconds += seconds
                progress.update(1)
                progress.set_postfix(loss=f"{entry['train/loss']:.3f}",
                                     tokens_per_s=f"{entry['train/tokens_per_second']:,.0f}")
                if state.step < self.max_steps and stop.requested(self.runtime):
                    progress.close()
                    self._stop(stop)
        progress.close()
        if not state.history:  # max_steps 0: the imported weights as they are, evaluated once
            val_loss = self._evaluate()
            state.history.append({"step": 0, "val/loss": val_loss, "val/perplexity": math.exp(val_loss)})
            _log_step(live, state.history[-1])
        final = {key: value for key, value in state.history[-1].items() if key.startswith("val/")}
        result = {"val_loss": final["val/loss"], "val_perplexity": final["val/perplexity"],
                  "unigram_val_perplexity": self.unigram, "steps": state.step, "resumed_from_step": self.resumed_from,
                  "parameters": self.model.num_parameters(), "tokens": state.step * self.p.tokens_per_update,
                  "world_size": self.runtime.world_size}
        if main:
            self._publish()
            for name in ("unigram_val_perplexity", "parameters", "tokens", "world_size"):
                live.summary[name] = result[name]
            live.summary.update({"device": self.device_choice["device"], "precision": self.device_choice["precision"]})
            live.summary["train_seconds_this_run"] = train_seconds  # timing: the one non-reproducible number
            # `dvc exp show` lists columns in file order: validation first. The last update's learning rate
            # (~0 after the anneal) and speed say nothing about a run; the curves keep them.
            train = {key: value for key, value in live.summary.pop("train", {}).items()
                     if key not in ("learning_rate", "tokens_per_second")}
            live.summary = {"val": live.summary.pop("val", {}), "step": state.step, **live.summary, "train": train}
            live.end()
            self.resume_path.unlink(missing_ok=True)
            shutil.rmtree(self.staging, ignore_errors=True)
        distributed.barrier(self.runtime)
        return result

    def _train_one_update(self, live) -> tuple[dict[str, Any], float]:
        """One update, its evaluation, checkpoint and resume state where due: (its row of the history, the seconds
        the update took)."""
        main, state = self.runtime.is_main, self.state
        learning_rate = state.learning_rate
        started = time.perf_counter()
        loss, grad_norm = self._update()
        seconds = time.perf_counter() - started
        entry = {"step": state.step, "train/loss": loss, "train/learning_rate": learning_rate,
                 "train/grad_norm": grad_norm, "train/tokens": state.step * self.p.tokens_per_update,
                 "train/tokens_per_second": self.p.tokens_per_update / seconds}
        if self.peak is not None:  # a known GPU: its data-sheet peak at the precision trained in
            entry["train/mfu"] = model_flops_utilisation(
                entry["train/tokens_per_second"] / self.runtime.world_size, self._flops_per_token(),
                self.peak.flops)
        if state.step % self.schedule.eval_interval == 0 or state.step == self.max_steps:
            val_loss = self._evaluate()
            entry.update({"val/loss": val_loss, "val/perplexity": math.exp(val_loss)})
            if main:
                log.info("update %d: train loss %.4f, val loss %.4f, val perplexity %.2f", state.step, loss,
                         val_loss, math.exp(val_loss))
        state.history.append(entry)
        _log_step(live, entry)
        if main and "val/loss" in entry:
            live.make_summary()  # at evaluations only: DVCLive's per-step sync costs more the longer the run
        if main and state.step in self.schedule.kept_checkpoints:
            save_model(self.model, self.staging / checkpoint_file(state.step))
        if state.step % self.schedule.save_interval == 0 and state.step < self.max_steps:
            save_state(self.state, self.resume_path, self.signature, self.runtime)
        return entry, seconds

    def _stop(self, stop: StopRequest) -> None:
        """Save the resume state (whatever save_interval says) and stop with the status that gets the job retried."""
        save_state(self.state, self.resume_path, self.signature, self.runtime)
        distributed.barrier(self.runtime)
        raise Stopped(f"pretrain {self.kind}: stopped by {stop.received.name if stop.received else 'another process'}"
                      f" after update {self.state.step} of {self.max_steps}; its resume state is saved in "
                      f"{self.resume_path}: run the stage again to continue from there")

    def _publish(self) -> None:
        """Move the finished run's checkpoints to their final place, then write the final model."""
        remove_stale_temporaries(self.staging)
        missing = [step for step in self.schedule.kept_checkpoints
                   if not (self.staging / checkpoint_file(step)).is_file()]
        if missing:
            log.warning("checkpoints for update(s) %s are missing from %s (removed by hand?)", missing, self.staging)
        with atomic_directory(self.out_dir / CHECKPOINTS) as folder:
            for _, checkpoint in sorted(kept_checkpoints(self.staging).items()):
                link_or_copy(checkpoint, folder / checkpoint.name)
        save_model(self.model, self.out_dir / MODEL_FILE)
        remove_stale_temporaries(self.out_dir)


def _log_step(live, entry: dict[str, Any]) -> None:
    """A row per metric in DVCLive's plots; not `live.next_step()`, which re-reads every plot file at each call."""
    if live is None:
        return
    live.step = entry["step"]
    for name, value in entry.items():
        if name != "step":
            live.log_metric(name, value)

