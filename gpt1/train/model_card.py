"""A fine-tuning run's model card (model_card.md beside its scores): what was trained, on what, how, and its scores.

Deterministic: no dates, timings or host names, so a re-run writes the same bytes. The fine-tuning settings it records
are those whose role in the schema says `card` (gpt1/params/roles.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from gpt1.data.records import SPLITS, TaskSpec
from gpt1.methods import ResolvedMethod
from gpt1.model.task_tokens import TaskTokens
from gpt1.params.roles import keys_with
from gpt1.params.schema import FinetuneParams


@dataclass(frozen=True)
class RunCard:
    """What a run's model card says: what was trained, on what, how, and its scores."""
    task: str
    method: ResolvedMethod  # its name, meaning, λ and learning rate
    seed: int
    transfer_layers: int | None
    pretrain_step: int | None  # started from the checkpoint after this pretraining update (None: the final weights)
    n_ctx: int
    model_kind: str
    model_config: dict
    parameters: int
    history: list[dict[str, float]]
    results: dict[str, dict]
    saved_weights: bool
    precision: str
    model_of: str | None = None  # scored with this task's model, trained on its training split (TaskSpec.model_of)
    reproduce: str | None = None  # the command line that runs this seed alone; None: run through the library


def model_card(card: RunCard, finetune: FinetuneParams, sample_seed: int, data: TaskTokens) -> str:
    """What the run did, in Markdown; deterministic (no dates, no timings, no host names), so a re-run writes the
    same bytes. `finetune`: params' section the run trained with; `sample_seed`: the project seed its task's rows
    were sampled with."""
    spec = data.spec
    transfer = "all" if card.transfer_layers is None else f"embeddings + first {card.transfer_layers} blocks"
    lines = [
        f"# Fine-tuning run: {card.task} / {card.method.name} / seed {card.seed}", "",
        f"Reproduce: `{card.reproduce or _library_call(card)}`", "",
        "## Task",
        f"- family: {spec.family}; target: {_target(spec)}; metrics: {list(spec.metrics)}",
        f"- stands for: {spec.stands_for or '-'} (source: {spec.source})", "",
        "## Model",
        f"- method: {card.method.name}: {card.method.meaning}",
        f"- kind: {card.model_kind}; {card.parameters:,} parameters with the task head; context {card.n_ctx} tokens",
        *([f"- fine-tuned as {card.model_of}'s run (on {card.model_of}'s training split); this task scores that "
            "model on its own dev and test splits"] if card.model_of else []),
        f"- pretrained layers transferred: {transfer if card.method.pretrained else 'none'}",
        *([f"- starting checkpoint: after pretraining update {card.pretrain_step} (not the final weights)"]
          if card.pretrain_step is not None else []),
        f"- λ (auxiliary LM weight) used: {card.method.lm_coef:g}; precision: {card.precision}",
        f"- config: `{json.dumps(card.model_config, sort_keys=True)}`", "",
        "## Data", "| split | rows in file | rows used |", "|---|---|---|",
        *(f"| {split} | {data.full_sizes[split]} | {len(data.splits[split])} |" for split in SPLITS), "",
        f"Rows used: samples seeded by the project seed ({sample_seed}), kept in file order, the same for every "
        "method and seed (train: `max_train_examples`, dev/test: `max_eval_examples`).", "",
        "## Fine-tuning parameters (params.yaml `finetune:`)",
        f"- learning rate: {card.method.lr:g} (`{card.method.rate_key}`)",
        f"- `{json.dumps({name: getattr(finetune, name) for name in card_settings(finetune)}, sort_keys=True)}`", "",
        "## Training (mean loss per epoch)", "| epoch | L3 | L2 (task) | L1 (LM) |", "|---|---|---|---|",
        *(f"| {i} | {h['loss']} | {h['task_loss']} | {h['lm_loss']} |" for i, h in enumerate(card.history, 1)), "",
        "## Results", "| split | metric | value |", "|---|---|---|",
    ]
    for split, result in card.results.items():
        lines += [f"| {split} | {metric} | {value} |" for metric, value in result["metrics"].items()]
        lines += [f"\nNote ({split}): {note}" for note in result["notes"]]
    lines += ["", f"Fine-tuned weights: {'saved as model.safetensors' if card.saved_weights else 'not saved'}."]
    return "\n".join(lines) + "\n"


def _library_call(card: RunCard) -> str:
    """The call that runs this seed alone, for a run the library was called for (a stage spells its command). A task
    scored with another's model is written by that task's run, so the call is that run's."""
    method = f"resolve({card.method.name!r}, params)"
    if card.model_of:
        return (f"gpt1.train.finetune.run_seeds(FinetuneSettings.of(params), <{card.model_of}'s tokens>, {method}, "
                f"[{card.seed}], scored_too=[(<{card.task}'s tokens>, <its runs folder>)], ...)")
    return (f"gpt1.train.finetune.run(FinetuneSettings.of(params), tokens, {method}, {card.seed}, "
            f"transfer_layers={card.transfer_layers}, pretrain_step={card.pretrain_step}, ...)")


def _target(spec: TaskSpec) -> str:
    if spec.family == "multiple_choice":
        return "index of the right candidate"
    return "a regression score" if spec.is_regression else f"labels {list(spec.labels)}"


def card_settings(finetune: FinetuneParams) -> tuple[str, ...]:
    """The finetune keys a card records: those whose role says so. The methods and seeds a stage loops over are not
    a run's settings; the rate is written on a line of its own."""
    return keys_with(type(finetune), lambda role: role.card)
