"""Fine-tuning's training loop: the paper's updates over a task's training examples (AdamW with decay only on
>= 2-D weights, linear warmup over `warmup_fraction` of the updates then linear decay to 0, gradient clipping,
L3 = L2 + λ·L1), resumable. Batch order comes from the run's seed, drawn at each epoch's start; with a seed's state
(`SeedState`) the loop saves and resumes everything it needs to end as a run never stopped."""

from __future__ import annotations

import logging
import math
from typing import Sequence

import torch
from tqdm import tqdm

from gpt1.methods import ResolvedMethod
from gpt1.model.heads import Batch, TaskModel, collate
from gpt1.model.transforms import EncodedExample
from gpt1.params.schema import FinetuneParams
from gpt1.train import distributed, precision
from gpt1.train.interrupt import StopRequest, Stopped
from gpt1.train.loop import TrainingState, load_state, save_state
from gpt1.train.lr_schedules import warmup_linear
from gpt1.train.seed_state import SeedState

log = logging.getLogger(__name__)


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
