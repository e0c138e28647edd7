"""Stage `pretrain`: train the Transformer or the LSTM baseline as a language model on the token corpus.

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
import os
import shutil
import time
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from torch.nn.parallel import DistributedDataParallel
from tqdm import tqdm

from gpt1.train import distributed, precision
from gpt1.atomic import atomic_directory, atomic_path
from gpt1.train.batches import WindowSampler, evaluation_starts, unigram_perplexity, windows_to_batch
from gpt1.config import Params
from gpt1.train.distributed import capture_rng, restore_rng, seed_everything
from gpt1.tokenizer.encode import load_tokens
from gpt1.errors import UserError
from gpt1.model.lm import LanguageModel, LSTMConfig, TransformerConfig, build_model, save_model

log = logging.getLogger(__name__)
Kind = Literal["transformer", "lstm"]
RESUME_FILE = "resume.pt"
STAGING_DIR = "resume-checkpoints"


# ---- settings derived from params --------------------------------------------------------------------

def model_config(params: Params, kind: Kind, vocab_size: int) -> TransformerConfig | LSTMConfig:
    if kind == "transformer":
        m = params.model
        return TransformerConfig(vocab_size=vocab_size, n_positions=m.n_positions, n_layer=m.n_layer,
                                 n_head=m.n_head, d_model=m.d_model, d_ff=m.d_ff, embd_dropout=m.dropout,
                                 attn_dropout=m.dropout, resid_dropout=m.dropout)
    if kind == "lstm":
        m = params.lstm
        return LSTMConfig(vocab_size=vocab_size, d_embed=m.d_embed, d_hidden=m.d_hidden, n_layer=m.n_layer,
                          dropout=m.dropout)
    raise UserError(f"unknown model kind {kind!r}; use 'transformer' or 'lstm'")


def accumulation_steps(params: Params, world_size: int) -> int:
    """Micro-batches per process per update: tokens_per_update = micro x n_positions x this x world."""
    p, length = params.pretrain, params.model.n_positions
    per_pass = p.micro_batch_size * length * world_size
    if p.tokens_per_update % per_pass:
        raise UserError(
            f"pretrain.tokens_per_update {p.tokens_per_update} is not divisible by micro_batch_size "
            f"{p.micro_batch_size} x model.n_positions {length} x {world_size} process(es) = {per_pass}; "
            f"make it a multiple of {per_pass}")
    return p.tokens_per_update // per_pass


def learning_rate_factor(step: int, warmup_steps: int, max_steps: int) -> float:
    """Multiplier of max_lr for update `step` (0-based): linear warmup, then cosine annealing to 0.
    The first update already uses lr > 0 (TF's Adam spent its first update at lr 0; nothing needs that)."""
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    progress = (step - warmup_steps) / max(1, max_steps - warmup_steps)
    return 0.5 * (1.0 + math.cos(math.pi * min(progress, 1.0)))


def checkpoint_steps(max_steps: int, count: int) -> list[int]:
    """`count` log-spaced update numbers from 1 to max_steps (fewer when rounding makes them collide)."""
    if max_steps == 0:
        return []
    if count == 1:
        return [max_steps]
    return sorted({int(round(step)) for step in np.geomspace(1, max_steps, count)} | {max_steps})


H100_BF16_DENSE_FLOPS = 989e12


def flops_per_token(num_parameters: int, n_layer: int, d_model: int, sequence_length: int) -> float:
    """Training FLOPs per token: 6 N for the weights (forward 2 N, backward 4 N) plus attention scores and
    their weighted sum, 12 L d T (PaLM appendix B; the formula llm.c and nanoGPT report MFU with)."""
    return 6.0 * num_parameters + 12.0 * n_layer * d_model * sequence_length


def model_flops_utilisation(tokens_per_second: float, flops_per_token_: float,
                            peak_flops: float = H100_BF16_DENSE_FLOPS) -> float:
    """Achieved model FLOP/s as a fraction of the device's peak (0.41 = 41 %)."""
    return tokens_per_second * flops_per_token_ / peak_flops


def initial_weights(path: Path, config: TransformerConfig) -> LanguageModel:
    """Released (or earlier) weights to start from, checked against params.yaml's model section; the BPE's
    special tokens are added as new embedding rows when the weights have none."""
    from gpt1.model.lm import load_model
    from gpt1.model.weights import import_weights

    if not path.exists():
        raise UserError(f"pretrain.init_from: {path} does not exist")
    model = load_model(path) if path.is_file() else import_weights(path, n_head=config.n_head)
    theirs, ours = model.config, config
    shape = ("n_layer", "n_head", "d_model", "d_ff", "n_positions")
    if any(getattr(theirs, name) != getattr(ours, name) for name in shape):
        raise UserError(f"pretrain.init_from: {path} has shape "
                        f"{ {name: getattr(theirs, name) for name in shape} }; set params.yaml's model section to it")
    if theirs.vocab_size > ours.vocab_size:
        raise UserError(f"pretrain.init_from: {path} has {theirs.vocab_size} tokens but the BPE has {ours.vocab_size}; "
                        "use the BPE those weights were trained with (bpe.import_from)")
    if theirs.vocab_size < ours.vocab_size:
        model.resize_token_embeddings(ours.vocab_size)
    log.info("starting from %s (%d parameters)", path, model.num_parameters())
    return model.train()


def build_optimizer(model: LanguageModel, params: Params, kind: Kind) -> torch.optim.AdamW:
    p = params.pretrain
    return torch.optim.AdamW(model.parameter_groups(p.weight_decay), lr=getattr(p, kind).max_lr,
                             betas=tuple(p.betas), eps=p.eps, fused=True)  # one kernel, CUDA and CPU alike


def run_signature(params: Params, kind: Kind, config: TransformerConfig | LSTMConfig, train_tokens: int) -> str:
    """What a resume checkpoint must match: everything that shapes the training trajectory (not the device,
    the micro-batch split, evaluation or checkpoint settings)."""
    p = params.pretrain
    return json.dumps({
        "kind": kind, "config": config.__dict__, "seed": params.seed, "train_tokens": train_tokens,
        "tokens_per_update": p.tokens_per_update, "max_steps": p.max_steps, "warmup_steps": p.warmup_steps,
        "betas": list(p.betas), "eps": p.eps, "weight_decay": p.weight_decay, "grad_clip": p.grad_clip,
        "max_lr": getattr(p, kind).max_lr, "init_from": p.init_from if kind == "transformer" else None,
    }, sort_keys=True)


# ---- resume state and reproducible files -------------------------------------------------------------

def load_resume(path: Path, signature: str) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # a truncated or foreign file: torch raises several kinds
        log.warning("ignoring unreadable resume state %s (%s); starting from scratch", path, error)
        return None
    if state.get("signature") != signature:
        log.warning("%s was written with other training settings; starting from scratch", path)
        return None
    return state


def _remove_stale_temporaries(folder: Path) -> None:
    """A kill during an atomic write leaves its temporary sibling behind."""
    for temporary in folder.glob(".*.tmp"):
        temporary.unlink(missing_ok=True)


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


# ---- the stage ---------------------------------------------------------------------------------------


class Trainer:
    def __init__(self, params: Params, kind: Kind, tokens_dir: Path, out_dir: Path, metrics_dir: Path,
                 runtime: distributed.Runtime):
        self.params, self.p, self.kind, self.runtime = params, params.pretrain, kind, runtime
        self.out_dir, self.metrics_dir = out_dir, metrics_dir
        self.length = params.model.n_positions
        self.accumulation = accumulation_steps(params, runtime.world_size)
        if not (tokens_dir / "meta.json").is_file():
            raise UserError(f"{tokens_dir / 'meta.json'} not found; run the tokenize stage first")
        vocab_size = json.loads((tokens_dir / "meta.json").read_text())["vocab_size"]
        self.train_tokens, self.val_tokens = load_tokens(tokens_dir, "train"), load_tokens(tokens_dir, "val")
        if runtime.device.type == "cuda":
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.backends.cudnn.allow_tf32 = True
        self.config = model_config(params, kind, vocab_size)
        torch.manual_seed(params.seed)  # the same initial weights on every rank
        self.model = build_model(kind, self.config)
        if kind == "transformer" and self.p.init_from:
            self.model = initial_weights(Path(self.p.init_from), self.config)
        self.model = self.model.to(runtime.device)
        self.optimizer = build_optimizer(self.model, params, kind)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda step: learning_rate_factor(step, self.p.warmup_steps, self.p.max_steps))
        seed_everything(params.seed, runtime.rank)
        self.sampler = WindowSampler(self.train_tokens, self.length, params.seed)
        self.eval_starts = evaluation_starts(self.val_tokens, self.length, self.p.eval_tokens)
        self.unigram = unigram_perplexity(self.train_tokens, self.val_tokens, self.eval_starts, self.length,
                                          vocab_size)
        self.checkpoint_steps = checkpoint_steps(self.p.max_steps, self.p.checkpoints)
        self.autocast = precision.autocast(runtime.device, params.pretrain.dtype)
        self.signature = run_signature(params, kind, self.config, len(self.train_tokens))
        self.resume_path, self.staging = out_dir / RESUME_FILE, out_dir / STAGING_DIR
        self.step, self.sequences_seen, self.history = 0, 0, []
        self.resumed_from = self._resume()
        self.train_model = torch.compile(self.model) if self.p.compile else self.model
        if runtime.distributed:
            self.train_model = DistributedDataParallel(
                self.train_model, device_ids=[runtime.device.index] if runtime.device.type == "cuda" else None)

    def _resume(self) -> int:
        state = load_resume(self.resume_path, self.signature)
        if state is None:
            if self.runtime.is_main:  # checkpoints of an abandoned run must not mix with this one's
                shutil.rmtree(self.staging, ignore_errors=True)
                self.resume_path.unlink(missing_ok=True)
            distributed.barrier(self.runtime)
            return 0
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.step, self.sequences_seen, self.history = state["step"], state["sequences_seen"], state["history"]
        if len(state["rng"]) == self.runtime.world_size:
            restore_rng(state["rng"][self.runtime.rank])
        else:
            log.warning("resume state was written by %d process(es), this run has %d: dropout masks will not "
                        "match an uninterrupted run", len(state["rng"]), self.runtime.world_size)
        log.info("resuming %s pretraining from %s at update %d", self.kind, self.resume_path, self.step)
        return self.step

    def _save_resume(self) -> None:
        rng = distributed.all_gather_objects(capture_rng(), self.runtime)
        if not self.runtime.is_main:
            return
        state = {"signature": self.signature, "step": self.step, "sequences_seen": self.sequences_seen,
                 "model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
                 "scheduler": self.scheduler.state_dict(), "rng": rng, "history": self.history}
        with atomic_path(self.resume_path) as temporary:
            torch.save(state, temporary)

    def _update(self) -> tuple[float, float]:
        """One optimiser update over this rank's share of the global batch; returns (mean loss, grad norm)."""
        micro, rank = self.p.micro_batch_size, self.runtime.rank
        loss_sum = torch.zeros((), device=self.runtime.device)
        for index in range(self.accumulation):
            # Sequence numbers are global: rank r takes micro-batches r*A .. r*A + A - 1 of the update, so the
            # update sees the same sequences whatever the number of processes.
            first = self.sequences_seen + (rank * self.accumulation + index) * micro
            inputs, targets = self.sampler.batch(first, micro)
            inputs, targets = inputs.to(self.runtime.device), targets.to(self.runtime.device)
            last = index == self.accumulation - 1
            sync = contextlib.nullcontext() if last or not self.runtime.distributed else self.train_model.no_sync()
            with sync:
                with self.autocast:
                    loss = self.train_model(inputs, targets)
                (loss / self.accumulation).backward()
            loss_sum += loss.detach().float()
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.p.grad_clip)
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.sequences_seen += micro * self.accumulation * self.runtime.world_size
        mean_loss = distributed.all_reduce_sum(loss_sum / self.accumulation, self.runtime) / self.runtime.world_size
        return mean_loss.item(), grad_norm.item()

    def _flops_per_token(self) -> float:
        if isinstance(self.config, TransformerConfig):
            return flops_per_token(self.model.num_parameters(), self.config.n_layer, self.config.d_model, self.length)
        return 6.0 * self.model.num_parameters()

    def _evaluate(self) -> float:
        return evaluate(self.model, self.val_tokens, self.eval_starts, self.length, self.p.micro_batch_size,
                        self.runtime, self.autocast)

    def train(self) -> dict[str, Any]:
        from dvclive import Live

        main = self.runtime.is_main
        live = Live(dir=str(self.metrics_dir), save_dvc_exp=False, dvcyaml=None) if main else None
        for entry in self.history:  # a resumed run rewrites the curves it had logged before the interruption
            _log_step(live, entry)
        if main:
            log.info("%s: %d parameters, %d update(s) of %d tokens (%d process(es) x %d micro-batch(es) of %d), "
                     "unigram validation perplexity %.1f", self.kind, self.model.num_parameters(), self.p.max_steps,
                     self.p.tokens_per_update, self.runtime.world_size, self.accumulation,
                     self.p.micro_batch_size, self.unigram)
        self.model.train()
        progress = tqdm(total=self.p.max_steps, initial=self.step, desc=f"pretrain {self.kind}", unit="update",
                        disable=None if main else True)
        train_seconds = 0.0
        while self.step < self.p.max_steps:
            learning_rate = self.scheduler.get_last_lr()[0]
            started = time.perf_counter()
            loss, grad_norm = self._update()
            seconds = time.perf_counter() - started
            train_seconds += seconds
            self.step += 1
            entry = {"step": self.step, "train/loss": loss, "train/learning_rate": learning_rate,
                     "train/grad_norm": grad_norm, "train/tokens": self.step * self.p.tokens_per_update,
                     "train/tokens_per_second": self.p.tokens_per_update / seconds}
            if self.runtime.device.type == "cuda":  # the GPU yardstick; meaningless against a CPU
                entry["train/mfu_h100_bf16"] = model_flops_utilisation(
                    entry["train/tokens_per_second"] / self.runtime.world_size, self._flops_per_token())
            if self.step % self.p.eval_interval == 0 or self.step == self.p.max_steps:
                val_loss = self._evaluate()
                entry.update({"val/loss": val_loss, "val/perplexity": math.exp(val_loss)})
                if main:
                    log.info("update %d: train loss %.4f, val loss %.4f, val perplexity %.2f", self.step, loss,
                             val_loss, math.exp(val_loss))
            self.history.append(entry)
            _log_step(live, entry)
            if main and self.step in self.checkpoint_steps:
                save_model(self.model, self.staging / f"step_{self.step}.safetensors")
            if self.step % self.p.save_interval == 0 and self.step < self.p.max_steps:
                self._save_resume()
            progress.update(1)
            progress.set_postfix(loss=f"{loss:.3f}", tokens_per_s=f"{entry['train/tokens_per_second']:,.0f}")
        progress.close()
        if not self.history:  # max_steps 0: the imported weights as they are, evaluated once
            val_loss = self._evaluate()
            self.history.append({"step": 0, "val/loss": val_loss, "val/perplexity": math.exp(val_loss)})
            _log_step(live, self.history[-1])
        final = {key: value for key, value in self.history[-1].items() if key.startswith("val/")}
        result = {"val_loss": final["val/loss"], "val_perplexity": final["val/perplexity"],
                  "unigram_val_perplexity": self.unigram, "steps": self.step, "resumed_from_step": self.resumed_from,
                  "parameters": self.model.num_parameters(), "tokens": self.step * self.p.tokens_per_update,
                  "world_size": self.runtime.world_size}
        if main:
            self._publish()
            for name in ("unigram_val_perplexity", "parameters", "tokens", "world_size"):
                live.summary[name] = result[name]
            live.summary["train_seconds_this_run"] = train_seconds  # timing: the one non-reproducible number
            live.end()
            self.resume_path.unlink(missing_ok=True)
            shutil.rmtree(self.staging, ignore_errors=True)
        distributed.barrier(self.runtime)
        return result

    def _publish(self) -> None:
        """Move the finished run's checkpoints to their final place, then write the final model."""
        _remove_stale_temporaries(self.staging)
        missing = [step for step in self.checkpoint_steps
                   if not (self.staging / f"step_{step}.safetensors").is_file()]
        if missing:
            log.warning("checkpoints for update(s) %s are missing from %s (removed by hand?)", missing, self.staging)
        with atomic_directory(self.out_dir / "checkpoints") as folder:
            for checkpoint in sorted(self.staging.glob("step_*.safetensors")):
                _link_or_copy(checkpoint, folder / checkpoint.name)
        save_model(self.model, self.out_dir / "model.safetensors")
        _remove_stale_temporaries(self.out_dir)


def _log_step(live, entry: dict[str, Any]) -> None:
    if live is None:
        return
    live.step = entry["step"]
    for name, value in entry.items():
        if name != "step":
            live.log_metric(name, value)
    live.next_step()


def _link_or_copy(source: Path, destination: Path) -> None:
    try:
        os.link(source, destination)
    except OSError:  # another file system, or links not allowed
        shutil.copy2(source, destination)
