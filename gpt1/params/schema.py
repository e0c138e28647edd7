"""params.yaml -> typed, validated params.

Every stage starts by loading params.yaml through `load_params`, with any profiles merged over it
(`gpt1 --profile profiles/paper.yaml ...`); a misspelt key, a wrong type or an out-of-range value stops it
with one line naming the key and what is allowed. Code reads typed
attributes (`params.bpe.merges`), never raw dict keys.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal, Optional, Sequence

from pydantic import Field, StrictInt, ValidationError, field_validator, model_validator

from gpt1.errors import UserError
from gpt1.methods import FULL
from gpt1.kinds import LSTM, TRANSFORMER
from gpt1.params.files import DEFAULT_PARAMS, compose_raw
from gpt1.params.applicability import unpretrained
from gpt1.params.checks import layer_transfer_fits, scored_tasks_fit, transfer_curve_fits
from gpt1.params.schedule import PretrainSchedule
from gpt1.params.data_section import DataParams
from gpt1.params.method_section import MethodParams
from gpt1.params.roles import FINE_TUNING, Role
from gpt1.params.section import Section
from gpt1.params.user_data import FAMILY_TAGS


# Adam's decay rates: 1 would never forget, below 0 is meaningless; eps must be a finite positive number.
Beta = Annotated[float, Field(ge=0, lt=1)]
AdamEps = Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)]
Seed = Annotated[StrictInt, Field(ge=0, le=2**64 - 1)]  # strict: `true` is not seed 1; torch takes 64 bits
# A training setting's role: each stage that fine-tunes re-runs for it, a resumed or retried seed must have been
# trained with it (gpt1/params/roles.py), and the model card records it.
TRAINING = Role(stages=FINE_TUNING, resume=True, card=True)
PRETRAINING = Role(stages=("pretrain",))
TRAJECTORY = Role(stages=("pretrain",), resume=True)  # shapes the updates: a resume checkpoint must match it
# How long pretraining runs: each stage that reads a pretrained model's length or checkpoints re-runs for it.
LENGTH = Role(stages=("pretrain", "zeroshot", "transfer-curve", "transfer-figure"), resume=True,
              notes=(("transfer-curve", "a Transformer pretrained here keeps checkpoints"),))


def _distinct(values: list) -> list:
    repeated = sorted({value for value in values if values.count(value) > 1})
    if repeated:
        raise ValueError(f"lists {repeated} more than once; list each once")
    return values


class BpeParams(Section):
    merges: int = Field(ge=1, le=65_000, description="number of BPE merges (40,000 in the paper)")
    import_from: Annotated[Optional[str], Role(stages=("user-files",))] = Field(
        description="folder with released encoder_bpe_<merges>.json + vocab_<merges>.bpe to use "
        "instead of training (needed with pretrain.init_from released weights)")


class TransformerParams(Section):
    """GPT-1's shape; the vocabulary size comes from the trained BPE (plus the special tokens)."""

    n_positions: Annotated[int, Role(
        stages=("pretrain", "zeroshot"),
        notes=(("pretrain", "the LSTM reads sequences as long as the Transformer's"),))] = Field(ge=8, le=4096)
    n_layer: Annotated[int, Role(stages=("layer-figure",))] = Field(ge=1, le=96)
    d_model: int = Field(ge=8)  # before n_head: its validator reads d_model
    n_head: int = Field(ge=1)
    d_ff: int = Field(ge=8)
    dropout: float = Field(ge=0, lt=1, description="embedding and residual dropout")
    attn_dropout: float = Field(ge=0, lt=1, description="dropout of the attention probabilities (the paper: 0.1)")

    @field_validator("n_head")
    @classmethod
    def _divides_width(cls, n_head: int, info) -> int:
        d_model = info.data.get("d_model")
        if d_model is not None and d_model % n_head:
            raise ValueError(f"must divide model.d_model ({d_model})")
        return n_head


class LstmParams(Section):
    """The paper's LSTM baseline (1 layer, 2048 units)."""

    n_layer: int = Field(ge=1, le=8)
    d_embed: int = Field(ge=8)
    d_hidden: int = Field(ge=8)
    dropout: float = Field(ge=0, lt=1)


class OptimiserParams(Section):
    """What differs between the two pretrained models."""

    max_lr: Annotated[float, Role(resume=True)] = Field(gt=0, lt=1)
    max_steps: Annotated[Optional[int], Role(resume=True)] = Field(
        default=None, ge=1, description="this model's updates, where they differ from pretrain.max_steps (the LSTM "
        "of the released-weights recipe)")


class PretrainParams(Section):
    device: Annotated[Literal["auto", "cpu", "cuda"], PRETRAINING]
    # auto: bf16 autocast where the hardware has native bf16 (CUDA, AVX512-BF16/AMX CPUs), else fp32
    dtype: Annotated[Literal["auto", "float32", "bfloat16"], PRETRAINING]
    compile: Annotated[bool, PRETRAINING]
    # How the LM loss is computed (gpt1/model/lm_loss.py): chunked never holds the logits; dense hands torch.compile
    # one graph to fuse. The same value and gradients, other rounding.
    lm_loss: Annotated[Literal["chunked", "dense"], PRETRAINING]
    # CUDA: ask for deterministic kernels (gpt1/train/precision.py); false lets faster non-deterministic ones run
    deterministic: Annotated[bool, PRETRAINING]
    # auto: one per GPU the job is given (SLURM's or CUDA_VISIBLE_DEVICES), else one; above one, `gpt1 pretrain`
    # starts them through torchrun's launcher (gpt1/train/launch.py)
    processes_per_node: Annotated[Literal["auto"] | Annotated[StrictInt, Field(ge=1, le=64)], PRETRAINING]
    micro_batch_size: Annotated[int, PRETRAINING] = Field(
        ge=1, description="the most sequences per forward pass on one device")
    tokens_per_update: Annotated[int, Role(stages=("pretrain", "transfer-figure"), resume=True)] = Field(
        ge=1, description="tokens per optimizer step, all devices and accumulation")
    max_steps: Annotated[Optional[int], LENGTH] = Field(
        ge=0, description="updates; 0: no training, only with init_from (released weights as they are); null: give "
        "epochs instead")
    epochs: Annotated[Optional[float], LENGTH] = Field(
        default=None, gt=0, le=10_000, description="the paper's unit instead of max_steps: passes over the tokenized "
        "training corpus (gpt1/params/schedule.py)")
    warmup_steps: Annotated[int, TRAJECTORY] = Field(ge=0)
    betas: Annotated[tuple[Beta, Beta], TRAJECTORY]
    eps: Annotated[AdamEps, TRAJECTORY]
    weight_decay: Annotated[float, TRAJECTORY] = Field(ge=0)
    grad_clip: Annotated[float, TRAJECTORY] = Field(gt=0)
    eval_interval: Annotated[int, PRETRAINING] = Field(ge=1)
    eval_tokens: Annotated[int, PRETRAINING] = Field(ge=1)
    checkpoints: Annotated[int, TRAJECTORY] = Field(
        ge=1, description="log-spaced checkpoints kept for the zero-shot analysis")  # resumed runs stage their files
    save_interval: Annotated[int, PRETRAINING] = Field(
        ge=1, description="updates between resume checkpoints (resume.pt)")
    init_from: Annotated[Optional[str], Role(
        stages=("user-files", "pretrain", "zeroshot"), resume=True,
        notes=(("zeroshot", "the Transformer's model, where nothing is pretrained here"),))] = Field(
        description="start the Transformer from these weights: released GPT-1 (an HF folder, or OpenAI's "
        "params_shapes.json + params_*.npy) or a gpt1 .safetensors checkpoint")
    # Each model's own section; the pretrain stage's job reads its own (gpt1/pipeline/stage_table.py).
    transformer: Annotated[OptimiserParams, Role(
        stages=("zeroshot", "transfer-curve", "transfer-figure"),
        notes=(("zeroshot", "each model's own max_steps, where set"), ("transfer-figure", "its max_steps, where set")))]
    lstm: Annotated[OptimiserParams, Role(stages=("zeroshot",))]

    @model_validator(mode="after")
    def _one_length(self) -> "PretrainParams":
        if (self.max_steps is None) == (self.epochs is None):
            raise ValueError("give the pretraining's length once: pretrain.max_steps (updates) or pretrain.epochs "
                             f"(passes over the corpus), the other null; found max_steps {self.max_steps}, epochs "
                             f"{self.epochs}")
        return self


class _FinetuneMethods(Section):
    """What the fine-tuning stages loop over, and the rate every method trains at unless it has its own."""

    # What a stage loops over, not a run's setting: a card naming them would go stale whenever one is added.
    methods: Annotated[list[str], Role(stages=("evaluate", "ablation", "transfer-figure"))] = Field(
        min_length=1, description="Table 5's methods, in its order: entries of the `methods` section; the finetune "
        "stage's jobs")
    seeds: Annotated[list[Seed], Role(stages=("finetune", "evaluate", "ablation", "paper-tables"))] = Field(
        min_length=1)

    _methods_distinct = field_validator("methods")(_distinct)
    _seeds_distinct = field_validator("seeds")(_distinct)
    lr: Annotated[float, Role(stages=FINE_TUNING)] = Field(
        gt=0, lt=1, description="every method's rate, but a method whose entry sets its own (methods.<name>.lr)")


class FinetuneParams(_FinetuneMethods):
    """The paper: lr 6.25e-5, batch 32, 3 epochs, warmup 0.2 % then linear decay, λ 0.5, dropout 0.1.

    A method's rate and λ reach a run's fingerprint through the method it resolves to (gpt1/methods.py), the row
    samples through the tokens' digest: their roles name no `resume`."""

    batch_size: Annotated[int, TRAINING] = Field(ge=1)
    epochs: Annotated[int, TRAINING] = Field(ge=1)
    warmup_fraction: Annotated[float, TRAINING] = Field(ge=0, lt=1)
    lm_coef: Annotated[float, Role(stages=FINE_TUNING, card=True)] = Field(
        ge=0, description="λ of the auxiliary LM loss; the no_aux_lm method uses 0")
    classifier_dropout: Annotated[float, TRAINING] = Field(ge=0, lt=1)
    betas: Annotated[tuple[Beta, Beta], TRAINING]
    eps: Annotated[AdamEps, TRAINING]
    weight_decay: Annotated[float, TRAINING] = Field(ge=0)
    grad_clip: Annotated[float, TRAINING] = Field(gt=0)
    max_train_examples: Annotated[Optional[int], Role(
        stages=(*FINE_TUNING, "encode-task", "baselines", "ablation"), card=True)] = Field(
        ge=1, description="seeded subsample of train (None: all)")
    max_eval_examples: Annotated[Optional[int], Role(
        stages=(*FINE_TUNING, "encode-task", "baselines", "encode-zeroshot"), card=True)] = Field(
        ge=1, description="seeded sample of dev/test, kept in file order (None: all)")
    # auto: a GPU where there is one; zeroshot scores the pretraining checkpoints on it too
    device: Annotated[Literal["auto", "cpu", "cuda"], Role(stages=(*FINE_TUNING, "zeroshot"), resume=True, card=True)]
    # auto: bf16 autocast where the hardware has native bf16 (CUDA, or a CPU with AVX512-BF16/AMX, where its
    # matmuls outrun fp32's), else fp32
    dtype: Annotated[Literal["auto", "float32", "bfloat16"], TRAINING]
    save_interval: Annotated[int, Role(stages=FINE_TUNING)] = Field(
        ge=1, description="updates between a seed's saved states (gpt1/train/seed_state.py)")


class AnalysisParams(Section):
    """Figure 2 (left): fine-tune with only the first k pretrained blocks transferred; and transfer over
    pretraining: fine-tune `full` from earlier pretraining checkpoints. Both run layer_transfer_seeds."""

    layer_transfer_tasks: Annotated[list[str], Role(stages=("layer-figure",))] = Field(min_length=1)
    layer_transfer_layers: Annotated[list[int], Role(stages=("layer-transfer", "layer-figure"))] = Field(
        min_length=1, description="values of k the layer_transfer stage trains, 0 ... model.n_layer - 1; the "
        "k = model.n_layer point is the finetune stage's `full` run")
    layer_transfer_seeds: Annotated[list[Seed], Role(
        stages=("layer-transfer", "transfer-curve", "layer-figure", "transfer-figure"))] = Field(min_length=1)
    transfer_curve_tasks: Annotated[list[str], Role(stages=("transfer-figure",))] = Field(
        min_length=1, description="tasks fine-tuned from earlier pretraining checkpoints")
    transfer_curve_steps: Annotated[list[Annotated[int, Field(ge=1)]], Role(
        stages=("transfer-curve", "transfer-figure"))] = Field(
        description="pretraining updates whose kept checkpoints (pretrain.checkpoints) start a run; the ends, 0 "
        "and the last update, are the finetune stage's no_pretrain and full runs. Empty: no transfer curve (its "
        "stages write a 'not applicable' result; released weights used as they are keep no checkpoints)")

    _seeds_distinct = field_validator("layer_transfer_seeds")(_distinct)
    _curve_distinct = field_validator("transfer_curve_tasks", "transfer_curve_steps")(_distinct)


class Params(Section):
    # The project seed: every stage that samples, splits, initialises or shuffles re-runs for it.
    seed: Annotated[Seed, Role(
        stages=("prepare", "encode-task", "pretrain", *FINE_TUNING, "baselines", "evaluate", "encode-zeroshot"),
        notes=(("evaluate", "the baselines are listed with it"),))]
    data: Annotated[DataParams, Role(stages=("prepare",))]
    bpe: Annotated[BpeParams, Role(stages=("bpe",))]
    # finetune builds its task models in this shape; the pretrain job reads its own section (its stage's row)
    model: Annotated[TransformerParams, Role(stages=("finetune",))]
    lstm: LstmParams
    pretrain: PretrainParams
    # Table 5's methods by name (a name is part of paths and stage names: letters, digits, _). A fine-tuning job lists
    # its own method's entry (gpt1/params/method_section.py); the ablation reads every entry's label and finding.
    methods: Annotated[dict[str, MethodParams], Role(stages=("ablation",))] = Field(min_length=1)
    finetune: FinetuneParams
    analysis: AnalysisParams

    @model_validator(mode="after")
    def _analysis_fits(self) -> "Params":
        if not PretrainSchedule.of(self.pretrain, TRANSFORMER).pretrains and not self.pretrain.init_from:
            raise ValueError("pretrain.max_steps is 0 but pretrain.init_from is not set: nothing would be trained")
        if named := [name for name in self.methods if not re.fullmatch(r"[A-Za-z0-9_]+", name)]:
            raise ValueError(f"methods: rename {', '.join(map(repr, named))} with letters, digits and _ only (a "
                             "method's name is part of its stages' names and of the paths they write)")
        if FULL not in self.methods:
            raise ValueError(f"the methods section has no entry {FULL}: Table 5 compares every other method with it")
        if unknown := [name for name in self.finetune.methods if name not in self.methods]:
            raise ValueError(f"finetune.methods names {', '.join(unknown)}, which the methods section has no entry "
                             f"for: add one, or use one of {', '.join(self.methods)}")
        lstm_methods = [name for name in self.finetune.methods if self.methods[name].starts_from == LSTM]
        if lstm_methods and unpretrained(self.pretrain, LSTM):
            raise ValueError("finetune.methods lists lstm, but pretrain.max_steps is 0 (the Transformer's weights as "
                             "init_from gives them) and the LSTM has no released weights: set pretrain.lstm.max_steps "
                             "to the updates it should train, or drop lstm (profiles/released.yaml does)")
        scored_tasks_fit(self)
        layer_transfer_fits(self)
        transfer_curve_fits(self)
        return self


# Keys that an older params.yaml spells by their former name: the error says the new one.
RENAMED = {"finetune.variants": "finetune.methods", "finetune.no_pretrain_lr": "methods.no_pretrain.lr"}


def _format_error(error: ValidationError, source: str) -> str:
    for found in error.errors():
        old = ".".join(str(part) for part in found["loc"])
        if found["type"] == "extra_forbidden" and old in RENAMED:
            return f"{source}: '{old}' is now called '{RENAMED[old]}'; rename the key"
    first = error.errors()[0]
    loc = first["loc"]
    if loc[:2] == ("data", "user_tasks") and len(loc) > 3 and loc[3] in FAMILY_TAGS:  # pydantic's union tag:
        loc = loc[:3] + loc[4:]  # not a key the user wrote
    key = ".".join(str(part) for part in loc) or "(top level)"
    kind = first["type"]
    if kind == "extra_forbidden":
        return f"{source}: unknown key '{key}'; remove it or fix its spelling"
    if kind == "missing":
        return f"{source}: missing key '{key}'"
    message = first["msg"].removeprefix("Value error, ")
    if not loc:  # a check across sections names its keys itself
        return f"{source}: {message}"
    return f"{source}: bad value for '{key}' ({first.get('input')!r}): {message}"


def parse_params(raw: Any, source: str = "params") -> Params:
    """Validate a parsed params mapping (used by the CLI and by the Snakefile)."""
    if not isinstance(raw, dict):
        raise UserError(f"{source}: expected a mapping of sections at the top level")
    try:
        return Params.model_validate(raw)
    except ValidationError as error:
        raise UserError(_format_error(error, source)) from None


def load_params(path: Path | str = DEFAULT_PARAMS, profiles: Sequence[Path | str] = ()) -> Params:
    """params.yaml, with `profiles` (files holding only the keys they change, e.g. profiles/paper.yaml) over it."""
    raw, source = compose_raw(path, profiles)
    return parse_params(raw, source)
