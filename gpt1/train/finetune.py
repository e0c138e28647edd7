"""Stage `finetune`: every seed of one (task, variant), as the paper fine-tunes (Section 3.2, 4.1).

AdamW (decay only on >= 2-D weights), linear warmup over `warmup_fraction` of the updates then linear
decay to 0, gradient clipping, classifier dropout, L3 = L2 + λ·L1. Variants (Table 5):
- `full`: pretrained Transformer, λ = lm_coef;   - `no_pretrain`: same sizes, random init, λ = lm_coef;
- `no_aux_lm`: pretrained Transformer, λ = 0;     - `lstm`: pretrained LSTM, λ = lm_coef.
`transfer_layers=k` (Figure 2, left) keeps the embeddings and the first k pretrained blocks and
re-initialises the rest; k = n_layer draws nothing and is byte for byte the `full` run.

Determinism: the training subsample depends only on the project seed (every variant and seed sees the
same examples, so seeds measure training randomness); the run's seed drives initialisation, dropout and
batch order. Output files hold no timings (they go to the log), so a rerun writes identical bytes. The seeds
of a stage share one process (imports, BPE and encoded examples are paid once); each writes exactly what a
process of its own would.
"""

from __future__ import annotations

import json
import logging
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Sequence

import torch
from safetensors.torch import save_file
from tqdm import tqdm

from gpt1.train import precision
from gpt1.atomic import atomic_directory
from gpt1.tokenizer.bpe import Gpt1Bpe
from gpt1.config import VARIANTS, Params
from gpt1.errors import UserError
from gpt1.model.heads import TaskModel, collate
from gpt1.eval.metrics import DIGITS, score
from gpt1.model.lm import GPT1, LanguageModel, build_model, load_model
from gpt1.data.records import SPLITS, TaskSpec
from gpt1.data.task_data import TaskData, load_task_data
from gpt1.model.transforms import EncodedExample, encode_examples

log = logging.getLogger(__name__)

CHECKPOINT = "model.safetensors"
# Evaluation keeps no activations for a backward pass, so it batches wider than training: fewer, larger
# matrix products (sequences of similar length are batched together, so little of it is padding).
EVAL_BATCH_SIZE = 64


# --- models ---------------------------------------------------------------------------------------------

def _fresh_transformer(params: Params, vocab_size: int) -> LanguageModel:
    sizes = params.model
    return build_model("transformer", dict(
        vocab_size=vocab_size, n_positions=sizes.n_positions, n_layer=sizes.n_layer, n_head=sizes.n_head,
        d_model=sizes.d_model, d_ff=sizes.d_ff, embd_dropout=sizes.dropout, attn_dropout=sizes.dropout,
        resid_dropout=sizes.dropout))


def _pretrained(path: Path, vocab_size: int) -> LanguageModel:
    model = load_model(path)
    have = model.config.vocab_size
    if have > vocab_size:
        raise UserError(f"{path} has {have} token embeddings but data/bpe has {vocab_size} tokens; "
                        "pretrain with the current BPE")
    if have < vocab_size:  # start / delimiter / extract are new, learned embeddings
        model.resize_token_embeddings(vocab_size)
    return model


def _reinitialise_blocks(model: GPT1, keep: int) -> None:
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


def language_model(params: Params, variant: str, vocab_size: int, pretrain_dir: Path,
                   transfer_layers: int | None = None) -> LanguageModel:
    """The variant's starting model (uses the global torch RNG: seed it first)."""
    if variant not in VARIANTS:
        raise UserError(f"unknown fine-tuning variant {variant!r}; use one of {', '.join(VARIANTS)}")
    if variant == "no_pretrain":
        if transfer_layers is not None:
            raise UserError("transfer_layers needs pretrained weights; use variant full or no_aux_lm")
        return _fresh_transformer(params, vocab_size)
    kind = "lstm" if variant == "lstm" else "transformer"
    model = _pretrained(Path(pretrain_dir) / kind / CHECKPOINT, vocab_size)
    if transfer_layers is not None:
        if kind != "transformer":
            raise UserError("transfer_layers applies to the Transformer variants (full, no_aux_lm)")
        _reinitialise_blocks(model, transfer_layers)
    return model


def context_length(params: Params, model: LanguageModel) -> int:
    """The Transformer's positions; the LSTM gets the same inputs as the Transformer it is compared with."""
    return model.config.n_positions if model.kind == "transformer" else params.model.n_positions


def resolve_device(setting: str) -> torch.device:
    if setting == "cuda" and not torch.cuda.is_available():
        raise UserError("finetune.device is cuda but no CUDA device is visible; use auto or cpu")
    return torch.device("cuda" if setting != "cpu" and torch.cuda.is_available() else "cpu")


# --- optimisation ---------------------------------------------------------------------------------------

def lr_factor(step: int, total: int, warmup: int) -> float:
    """Update `step` (0-based) of `total`: linear warmup over `warmup` updates, then linear decay to 0."""
    if step < warmup:
        return (step + 1) / warmup  # the first update already moves (TF's lr-0 first step is not copied)
    return max(0.0, (total - step) / max(1, total - warmup))


def _batches(count: int, size: int, generator: torch.Generator) -> list[list[int]]:
    order = torch.randperm(count, generator=generator).tolist()
    return [order[start:start + size] for start in range(0, count, size)]


def learning_rate(params: Params, variant: str) -> float:
    """The randomly initialised Transformer gets its own rate, chosen on dev like `lr`, so that Table 5 compares
    each variant at its best rather than at a rate tuned for pretrained weights."""
    settings = params.finetune
    return settings.no_pretrain_lr if variant == "no_pretrain" and settings.no_pretrain_lr else settings.lr


def train(task_model: TaskModel, examples: Sequence[EncodedExample], params: Params, lm_coef: float,
          seed: int, device: torch.device, lr: float | None = None) -> list[dict[str, float]]:
    """Fine-tune in place at `lr` (default finetune.lr); returns mean losses per epoch (L3, L2, L1)."""
    settings = params.finetune
    per_epoch = math.ceil(len(examples) / settings.batch_size)
    total = per_epoch * settings.epochs
    warmup = math.ceil(settings.warmup_fraction * total)
    optimizer = torch.optim.AdamW(task_model.parameter_groups(settings.weight_decay), lr=lr or settings.lr,
                                  betas=(0.9, 0.999), eps=1e-8, fused=True)  # CPU: 1.5x faster than foreach
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: lr_factor(step, total, warmup))
    generator = torch.Generator().manual_seed(seed)
    task_model.train()
    history = []
    progress = tqdm(total=total, desc="fine-tune", unit="update", disable=None)
    for epoch in range(settings.epochs):
        sums = {"loss": 0.0, "task_loss": 0.0, "lm_loss": 0.0}
        for indices in _batches(len(examples), settings.batch_size, generator):
            batch = collate([examples[i] for i in indices], task_model.regression).to(device)
            with precision.autocast(device, settings.dtype):
                loss, task_loss, language_loss = task_model.loss(batch, lm_coef)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(task_model.parameters(), settings.grad_clip)
            optimizer.step()
            schedule.step()
            sums["loss"] += loss.item()
            sums["task_loss"] += task_loss.item()
            sums["lm_loss"] += language_loss.item() if language_loss is not None else 0.0
            progress.update()
        history.append({name: round(value / per_epoch, 4) for name, value in sums.items()})
        log.info("epoch %d: %s", epoch + 1, history[-1])
    progress.close()
    return history


@torch.no_grad()
def predict(task_model: TaskModel, examples: Sequence[EncodedExample], batch_size: int,
            device: torch.device, dtype_setting: str = "float32") -> list[torch.Tensor]:
    """Eval-mode scores for every example, in input order: class/candidate probabilities or values."""
    task_model.eval()
    # Similar lengths together: less padding. Causal models ignore padding, so results do not depend on it.
    order = sorted(range(len(examples)), key=lambda i: (max(len(s) for s in examples[i].sequences), i))
    outputs: list[torch.Tensor | None] = [None] * len(examples)
    for start in range(0, len(order), batch_size):
        indices = order[start:start + batch_size]
        with precision.autocast(device, dtype_setting):
            scores, _ = task_model(collate([examples[i] for i in indices], task_model.regression).to(device))
        scores = scores.float() if task_model.regression else torch.softmax(scores.float(), dim=-1)
        for row, index in enumerate(indices):
            outputs[index] = scores[row].cpu()
    return outputs


def prediction_rows(outputs: list[torch.Tensor], examples: Sequence[EncodedExample],
                    regression: bool) -> list[dict]:
    rows = []
    for index, (output, example) in enumerate(zip(outputs, examples)):
        if regression:
            rows.append({"index": index, "label": example.label, "prediction": round(output.item(), DIGITS)})
        else:
            probabilities = [round(p, DIGITS) for p in output.tolist()]
            rows.append({"index": index, "label": int(example.label), "prediction": int(output.argmax().item()),
                         "probabilities": probabilities})
    return rows


# --- the model card --------------------------------------------------------------------------------------

VARIANT_MEANING = {
    "full": "pretrained Transformer, auxiliary LM objective (λ = finetune.lm_coef)",
    "no_pretrain": "Transformer of the same size, randomly initialised, auxiliary LM objective",
    "no_aux_lm": "pretrained Transformer, no auxiliary LM objective (λ = 0)",
    "lstm": "pretrained LSTM, auxiliary LM objective",
}


@dataclass(frozen=True)
class RunCard:
    task: str
    variant: str
    seed: int
    lm_coef: float
    transfer_layers: int | None
    n_ctx: int
    model_kind: str
    model_config: dict
    parameters: int
    history: list[dict[str, float]]
    results: dict[str, dict]
    saved_weights: bool
    precision: str


def _target(spec: TaskSpec) -> str:
    if spec.family == "multiple_choice":
        return "index of the right candidate"
    return "a regression score" if spec.is_regression else f"labels {list(spec.labels)}"


def _reproduce(card: RunCard) -> str:
    """A command that re-runs this seed alone (the CLI transfers layers into `full` only; else the API)."""
    if card.transfer_layers is None:
        return f"`gpt1 finetune --task {card.task} --variant {card.variant} --seed {card.seed}`"
    if card.variant == "full":
        return f"`gpt1 layer-transfer --task {card.task} --layers {card.transfer_layers} --seed {card.seed}`"
    return (f"`gpt1.train.finetune.run(params, {card.task!r}, {card.variant!r}, {card.seed}, "
            f"transfer_layers={card.transfer_layers})`")


def model_card(card: RunCard, params: Params, data: TaskData) -> str:
    """What the run did, in Markdown; deterministic (no dates, no timings, no host names)."""
    spec = data.spec
    transfer = "all" if card.transfer_layers is None else f"embeddings + first {card.transfer_layers} blocks"
    lines = [
        f"# Fine-tuning run: {card.task} / {card.variant} / seed {card.seed}", "",
        f"Reproduce: {_reproduce(card)}", "",
        "## Task",
        f"- family: {spec.family}; target: {_target(spec)}; metrics: {list(spec.metrics)}",
        f"- stands for: {spec.stands_for or '-'} (source: {spec.source})", "",
        "## Model",
        f"- variant: {card.variant}: {VARIANT_MEANING[card.variant]}",
        f"- kind: {card.model_kind}; {card.parameters:,} parameters with the task head; context {card.n_ctx} tokens",
        f"- pretrained layers transferred: {transfer if card.variant != 'no_pretrain' else 'none'}",
        f"- λ (auxiliary LM weight) used: {card.lm_coef:g}; precision: {card.precision}",
        f"- config: `{json.dumps(card.model_config, sort_keys=True)}`", "",
        "## Data", "| split | rows in file | rows used |", "|---|---|---|",
        *(f"| {split} | {data.full_sizes[split]} | {len(data.splits[split])} |" for split in SPLITS), "",
        f"Training rows: a subsample seeded by the project seed ({params.seed}), the same for every variant "
        "and seed; dev/test: the first `max_eval_examples` rows.", "",
        "## Fine-tuning parameters (params.yaml `finetune:`)",
        f"`{json.dumps(params.finetune.model_dump(mode='json'), sort_keys=True)}`", "",
        "## Training (mean loss per epoch)", "| epoch | L3 | L2 (task) | L1 (LM) |", "|---|---|---|---|",
        *(f"| {i} | {h['loss']} | {h['task_loss']} | {h['lm_loss']} |" for i, h in enumerate(card.history, 1)), "",
        "## Results", "| split | metric | value |", "|---|---|---|",
    ]
    for split, result in card.results.items():
        lines += [f"| {split} | {metric} | {value} |" for metric, value in result["metrics"].items()]
        lines += [f"\nNote ({split}): {note}" for note in result["notes"]]
    lines += ["", f"Fine-tuned weights: {'saved as ' + CHECKPOINT if card.saved_weights else 'not saved'}."]
    return "\n".join(lines) + "\n"


# --- the stage ------------------------------------------------------------------------------------------

def default_out_dir(task: str, variant: str, seed: int, transfer_layers: int | None = None) -> Path:
    name = variant if transfer_layers is None else f"{variant}_transfer{transfer_layers}"
    return Path("results/finetune") / task / name / f"seed{seed}"


@dataclass
class Prepared:
    """What every seed of a task shares, loaded once per process: seeds differ in the starting model,
    dropout and batch order only, never in the examples or their tokens."""
    params: Params
    task: str
    data: TaskData
    bpe: Gpt1Bpe
    device: torch.device
    tasks_dir: Path
    pretrain_dir: Path
    _encoded: dict[int, dict[str, list[EncodedExample]]] = field(default_factory=dict, repr=False)

    def encoded(self, n_ctx: int) -> dict[str, list[EncodedExample]]:
        """The splits as token sequences, encoded on first use: n_ctx comes from the starting model (the
        same for every seed of a variant), and encoding draws no random numbers, so caching changes nothing."""
        if n_ctx not in self._encoded:
            self._encoded[n_ctx] = {
                split: encode_examples(examples, self.data.spec, self.bpe, n_ctx,
                                       where=f"{self.tasks_dir}/{self.task}/{split}.jsonl")
                for split, examples in self.data.splits.items()}
        return self._encoded[n_ctx]


def prepare(params: Params, task: str, tasks_dir: Path = Path("data/tasks"), bpe_dir: Path = Path("data/bpe"),
            pretrain_dir: Path = Path("data/pretrain")) -> Prepared:
    return Prepared(params=params, task=task, data=load_task_data(params, task, tasks_dir), bpe=Gpt1Bpe.load(bpe_dir),
                    device=resolve_device(params.finetune.device), tasks_dir=Path(tasks_dir),
                    pretrain_dir=Path(pretrain_dir))


def _evaluate(task_model: TaskModel, encoded: dict[str, list[EncodedExample]], prepared: Prepared):
    """Predictions and scores on dev and test: ({split: {"metrics", "notes"}}, {split: rows})."""
    settings = prepared.params.finetune
    results, predictions = {}, {}
    for split in ("dev", "test"):
        outputs = predict(task_model, encoded[split], max(settings.batch_size, EVAL_BATCH_SIZE), prepared.device,
                          settings.dtype)
        predictions[split] = prediction_rows(outputs, encoded[split], task_model.regression)
        scored = score(prepared.data.spec, [row["label"] for row in predictions[split]],
                       [row["prediction"] for row in predictions[split]])
        results[split] = {"metrics": scored.values, "notes": list(scored.notes)}
    return results, predictions


def _write(out_dir: Path, predictions: dict[str, list[dict]], metrics: dict, card: str,
           task_model: TaskModel | None) -> None:
    """The run's folder, whole or not at all (an interrupted multi-seed run leaves complete seeds only)."""
    with atomic_directory(out_dir) as staging:
        for split, rows in predictions.items():
            (staging / f"predictions_{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        (staging / "metrics.json").write_text(json.dumps(metrics, indent=2, sort_keys=True) + "\n")
        (staging / "model_card.md").write_text(card)
        if task_model is not None:
            save_file({k: v.detach().cpu().contiguous() for k, v in task_model.state_dict().items()},
                      str(staging / CHECKPOINT))


def run_seed(prepared: Prepared, variant: str, seed: int, out_dir: Path, transfer_layers: int | None = None,
             save_weights: bool = False) -> dict[str, dict[str, float]]:
    """Fine-tune and evaluate one seed of a prepared task; writes what a process of its own would, byte for byte."""
    params, data, device = prepared.params, prepared.data, prepared.device
    started = time.perf_counter()
    # Reseeding replaces all of the global generator's state (CPU and CUDA), so an earlier seed in the same
    # process leaves nothing behind: init, dropout masks and the head draw from it; batch order from `seed`.
    torch.manual_seed(seed)
    model = language_model(params, variant, prepared.bpe.vocab_size, prepared.pretrain_dir, transfer_layers)
    n_ctx = context_length(params, model)
    task_model = TaskModel(model, data.spec, params.finetune.classifier_dropout).to(device)
    encoded = prepared.encoded(n_ctx)
    if task_model.regression:  # after encoding, which stops on an empty split
        task_model.set_target_scale([example.label for example in encoded["train"]])
    lm_coef = 0.0 if variant == "no_aux_lm" else params.finetune.lm_coef
    lr = learning_rate(params, variant)
    log.info("%s / %s / seed %d: %d train examples, λ = %g, lr %g, %d-token context", prepared.task, variant, seed,
             len(encoded["train"]), lm_coef, lr, n_ctx)
    built = time.perf_counter()
    history = train(task_model, encoded["train"], params, lm_coef, seed, device, lr)
    trained = time.perf_counter()
    results, predictions = _evaluate(task_model, encoded, prepared)
    metrics = {split: results[split]["metrics"] for split in results}
    card = RunCard(task=prepared.task, variant=variant, seed=seed, lm_coef=lm_coef, transfer_layers=transfer_layers,
                   n_ctx=n_ctx, model_kind=model.kind, model_config=asdict(model.config),
                   parameters=sum(p.numel() for p in task_model.parameters()), history=history, results=results,
                   saved_weights=save_weights, precision=precision.describe(device, params.finetune.dtype))
    _write(Path(out_dir), predictions, metrics, model_card(card, params, data), task_model if save_weights else None)
    log.info("%s / %s / seed %d: test %s; seconds: %.1f model (and encoding, first seed), %.1f training, "
             "%.1f evaluating", prepared.task, variant, seed, metrics["test"], built - started, trained - built,
             time.perf_counter() - trained)
    return metrics


def _seed_dir(out_root: Path | None, task: str, variant: str, seed: int, transfer_layers: int | None) -> Path:
    if out_root is None:
        return default_out_dir(task, variant, seed, transfer_layers)
    return Path(out_root) / f"seed{seed}"


def selected_seeds(seed: int | None, configured: Sequence[int]) -> list[int]:
    """The configured seeds (what the DAG runs, in one process), or the one `--seed` names for a one-off run."""
    return list(configured) if seed is None else [seed]


def run_seeds(params: Params, task: str, variant: str, seeds: Sequence[int], tasks_dir: Path = Path("data/tasks"),
              bpe_dir: Path = Path("data/bpe"), pretrain_dir: Path = Path("data/pretrain"),
              out_root: Path | None = None, transfer_layers: int | None = None,
              save_weights: bool = False) -> dict[int, dict[str, dict[str, float]]]:
    """Every seed of one (task, variant) in this process: imports, the BPE and the encoded examples are paid
    once. Seed S goes to out_root/seedS (default: results/finetune/T/V/seedS); returns {seed: metrics}."""
    started = time.perf_counter()
    prepared = prepare(params, task, tasks_dir, bpe_dir, pretrain_dir)
    log.info("%s: task data and BPE files read in %.1f s; seeds %s", task, time.perf_counter() - started, list(seeds))
    return {seed: run_seed(prepared, variant, seed, _seed_dir(out_root, task, variant, seed, transfer_layers),
                           transfer_layers, save_weights)
            for seed in seeds}


def run(params: Params, task: str, variant: str, seed: int, tasks_dir: Path = Path("data/tasks"),
        bpe_dir: Path = Path("data/bpe"), pretrain_dir: Path = Path("data/pretrain"), out_dir: Path | None = None,
        transfer_layers: int | None = None, save_weights: bool = False) -> dict[str, dict[str, float]]:
    """Fine-tune and evaluate one (task, variant, seed); returns {"dev": metrics, "test": metrics}."""
    out_dir = Path(out_dir) if out_dir is not None else default_out_dir(task, variant, seed, transfer_layers)
    prepared = prepare(params, task, tasks_dir, bpe_dir, pretrain_dir)
    return run_seed(prepared, variant, seed, out_dir, transfer_layers, save_weights)
