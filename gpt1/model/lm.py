"""GPT-1 (Radford et al. 2018) and the paper's LSTM baseline, plus a safetensors checkpoint format.

Parameter names follow transformers' OpenAIGPTModel (`tokens_embed`, `h.{i}.attn.c_attn`, `ln_1`, ...) so
that `gpt1.model.weights` converts by renaming and transposing only.

Language-model convention (as nanoGPT): `forward(input_ids, targets)` does NOT shift; the caller passes
`targets[:, t]` = the token that should follow `input_ids[:, t]`, and -100 where no loss is wanted. With
targets, forward returns only the mean loss, computed by gpt1.model.lm_loss without materialising the logits.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import torch
import torch.nn.functional as F
from torch import nn

from gpt1.model import safetensors_file
from gpt1.model.dropout import Dropout, dropout
from gpt1.kinds import LSTM, TRANSFORMER
from gpt1.errors import UserError
from gpt1.model.lm_loss import mean_lm_loss


# The multiple a GPU pads the output layer's rows to (LanguageModel.pad_vocab_to).
VOCAB_MULTIPLE = 64


@dataclass
class TransformerConfig:
    vocab_size: int = 40478  # 478 base symbols + 40,000 merges; callers add the 3 special tokens
    n_positions: int = 512
    n_layer: int = 12
    n_head: int = 12
    d_model: int = 768
    d_ff: int = 3072
    embd_dropout: float = 0.1
    attn_dropout: float = 0.1
    resid_dropout: float = 0.1
    layer_norm_eps: float = 1e-5
    init_std: float = 0.02

    def __post_init__(self) -> None:
        if self.d_model % self.n_head != 0:
            raise UserError(f"model d_model {self.d_model} is not divisible by n_head {self.n_head}; "
                            "choose sizes where d_model % n_head == 0")


@dataclass
class LSTMConfig:
    """The paper's baseline: a single-layer LSTM with 2048 units (Table 5)."""

    vocab_size: int = 40478
    d_embed: int = 768  # not given in the paper; the Transformer's width keeps the embeddings comparable
    d_hidden: int = 2048
    n_layer: int = 1
    dropout: float = 0.1
    init_std: float = 0.02


def decay_groups(module: nn.Module, weight_decay: float) -> list[dict[str, Any]]:
    """AdamW groups: the paper's modified L2 touches only weights with >= 2 dims, never biases or LN gains."""
    trainable = [parameter for parameter in module.parameters() if parameter.requires_grad]
    return [
        {"params": [p for p in trainable if p.dim() >= 2], "weight_decay": weight_decay},
        {"params": [p for p in trainable if p.dim() < 2], "weight_decay": 0.0},
    ]


class LanguageModel(nn.Module):
    """What both models share: tied token embedding `tokens_embed`, the LM loss and optimiser groups."""

    kind: str
    config: TransformerConfig | LSTMConfig
    tokens_embed: nn.Embedding
    hidden_size: int  # width of `hidden_states`, which task heads read
    # Whether a batch's rows may run as groups of similar length (gpt1/model/heads.py): a Transformer pass costs
    # what its padded tokens cost, while the LSTM's time steps run one after another whatever the rows.
    groups_rows_by_length: bool
    # How lm_loss computes the loss (gpt1/model/lm_loss.py's LM_LOSS_KINDS; the same value and gradients either way):
    # not part of the config, so no checkpoint records it. Set it with lm_loss.checked_lm_loss_kind.
    lm_loss_kind: str = "chunked"
    # The output layer's rows rounded up to a multiple of this for the matrix products only (None: VOCAB_MULTIPLE on
    # CUDA, 1 elsewhere). A GPU's matrix kernels run fastest on dimensions that are multiples of 64, and 40,481 is
    # not; the added rows are zeros made for each pass, their logits are masked, so no weight, checkpoint or logit
    # of the real vocabulary changes. Not part of the config, like lm_loss_kind.
    pad_vocab_to: int | None = None

    def hidden_states(self, input_ids: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def output_features(self, hidden_states: torch.Tensor) -> torch.Tensor:
        """What the tied output layer multiplies with the token embedding (d_model wide)."""
        raise NotImplementedError

    def output_weight(self) -> torch.Tensor:
        """The tied output matrix, its rows padded with zeros to a multiple of pad_vocab_to (see there)."""
        weight = self.tokens_embed.weight
        multiple = self.pad_vocab_to if self.pad_vocab_to is not None else VOCAB_MULTIPLE if weight.is_cuda else 1
        extra = -weight.shape[0] % multiple
        return F.pad(weight, (0, 0, 0, extra)) if extra else weight

    def lm_logits(self, hidden_states: torch.Tensor) -> torch.Tensor:
        """Logits (..., vocab_size) of the real vocabulary."""
        logits = F.linear(self.output_features(hidden_states), self.output_weight())
        return logits[..., :self.tokens_embed.weight.shape[0]]

    def lm_loss(self, hidden_states: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Mean next-token loss of hidden states (..., width) against targets (...), -100 = ignore."""
        features = self.output_features(hidden_states)
        return mean_lm_loss(self.lm_loss_kind, features.reshape(-1, features.shape[-1]), self.output_weight(),
                            targets.reshape(-1), vocab_size=self.tokens_embed.weight.shape[0])

    def forward(self, input_ids: torch.Tensor, targets: torch.Tensor | None = None) -> torch.Tensor:
        """Logits (B, T, V); with `targets` (B, T, already shifted, -100 = ignore) the mean loss instead."""
        hidden_states = self.hidden_states(input_ids)
        if targets is None:
            return self.lm_logits(hidden_states)
        return self.lm_loss(hidden_states, targets)

    def num_parameters(self) -> int:
        """Every parameter once: the output layer is the token embedding, so it is not counted twice."""
        return sum(parameter.numel() for parameter in self.parameters())

    def parameter_groups(self, weight_decay: float) -> list[dict[str, Any]]:
        return decay_groups(self, weight_decay)

    @torch.no_grad()
    def resize_token_embeddings(self, new_vocab_size: int) -> None:
        """Append rows drawn from N(0, init_std) (e.g. start/delimiter/extract); existing rows are kept.
        The embedding becomes a new Parameter: resize before building the optimiser."""
        old = self.tokens_embed.weight
        if new_vocab_size < old.shape[0]:
            raise ValueError(f"cannot shrink the vocabulary from {old.shape[0]} to {new_vocab_size}")
        extra = torch.randn(new_vocab_size - old.shape[0], old.shape[1], device=old.device, dtype=old.dtype)
        self.tokens_embed = nn.Embedding(new_vocab_size, old.shape[1], device=old.device, dtype=old.dtype)
        self.tokens_embed.weight.copy_(torch.cat([old, extra * self.config.init_std]))
        self.config.vocab_size = new_vocab_size


class LayerNorm(nn.LayerNorm):
    """nn.LayerNorm, which under autocast may also return autocast's dtype (`keeps_autocast_dtype`).

    Autocast runs layer_norm in fp32 and returns fp32, so the residual stream of a post-LN block (the LayerNorms'
    outputs) travels between blocks, and its gradient back, at twice the bytes of the bf16 that every matrix product
    reads it in. With `keeps_autocast_dtype` the normalisation still accumulates its statistics in fp32 (inside the
    kernel), and only its output is rounded to the autocast dtype. Off by default; without autocast it changes
    nothing."""

    keeps_autocast_dtype = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        device_type = x.device.type
        if not (self.keeps_autocast_dtype and torch.is_autocast_enabled(device_type)):
            return super().forward(x)
        dtype = torch.get_autocast_dtype(device_type)
        with torch.autocast(device_type, enabled=False):
            return F.layer_norm(x.to(dtype), self.normalized_shape, self.weight.to(dtype), self.bias.to(dtype),
                                self.eps)


class CausalSelfAttention(nn.Module):
    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.n_head = config.n_head
        self.attn_dropout = config.attn_dropout
        self.c_attn = nn.Linear(config.d_model, 3 * config.d_model)  # query, key, value fused, in that order
        self.c_proj = nn.Linear(config.d_model, config.d_model)
        self.resid_dropout = Dropout(config.resid_dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, width = x.shape
        query, key, value = self.c_attn(x).split(width, dim=2)
        query, key, value = (t.view(batch, length, self.n_head, -1).transpose(1, 2) for t in (query, key, value))
        if self.training and self.attn_dropout > 0 and x.device.type == "cpu":
            # SDPA has no fused CPU kernel with dropout (it runs these same steps): spelled out, the probabilities
            # use the cheap CPU dropout masks, and one baddbmm scales the scores and adds the causal mask.
            head_width = query.shape[-1]
            query, key, value = (t.reshape(-1, length, head_width) for t in (query, key, value))
            future = torch.full((length, length), float("-inf"), device=x.device, dtype=query.dtype).triu(1)
            scores = torch.baddbmm(future, query, key.transpose(1, 2), alpha=head_width ** -0.5)
            out = dropout(scores.softmax(dim=-1), self.attn_dropout, training=True).to(value.dtype) @ value
            out = out.view(batch, self.n_head, length, head_width)
        else:
            out = F.scaled_dot_product_attention(query, key, value, is_causal=True,
                                                 dropout_p=self.attn_dropout if self.training else 0.0)
        out = out.transpose(1, 2).contiguous().view(batch, length, width)
        return self.resid_dropout(self.c_proj(out))


class MLP(nn.Module):
    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.c_fc = nn.Linear(config.d_model, config.d_ff)
        self.c_proj = nn.Linear(config.d_ff, config.d_model)
        self.dropout = Dropout(config.resid_dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.c_proj(F.gelu(self.c_fc(x), approximate="tanh")))


class Block(nn.Module):
    """Post-LayerNorm, as GPT-1 (not GPT-2's pre-LN): normalise after each residual sum."""

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.attn = CausalSelfAttention(config)
        self.ln_1 = LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.mlp = MLP(config)
        self.ln_2 = LayerNorm(config.d_model, eps=config.layer_norm_eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.ln_1(x + self.attn(x))
        return self.ln_2(h + self.mlp(h))


class GPT1(LanguageModel):
    kind = TRANSFORMER
    groups_rows_by_length = True

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.config = config
        self.hidden_size = config.d_model
        self.tokens_embed = nn.Embedding(config.vocab_size, config.d_model)
        self.positions_embed = nn.Embedding(config.n_positions, config.d_model)
        self.drop = Dropout(config.embd_dropout)
        self.h = nn.ModuleList(Block(config) for _ in range(config.n_layer))
        # No final LayerNorm and no separate output matrix: logits use tokens_embed.weight directly,
        # which keeps the tie intact through resizing, optimisers and safetensors (one tensor on disk).
        self.apply(self._init_weights)

    def _init_weights(self, module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=self.config.init_std)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)
        # nn.LayerNorm already starts with gain 1 and bias 0.

    def hidden_states(self, input_ids: torch.Tensor) -> torch.Tensor:
        """Final hidden states (B, T, d_model): the input of the LM output layer and of task heads."""
        length = input_ids.shape[1]
        if length > self.config.n_positions:
            raise ValueError(f"sequence of {length} tokens is longer than n_positions {self.config.n_positions}")
        positions = torch.arange(length, device=input_ids.device)
        x = self.drop(self.tokens_embed(input_ids) + self.positions_embed(positions))
        for block in self.h:
            x = block(x)
        return x

    def output_features(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return hidden_states

    def keep_autocast_dtype_in_layer_norms(self, keep: bool = True) -> None:
        """Whether the LayerNorms return autocast's dtype (LayerNorm.keeps_autocast_dtype); not part of the config:
        no checkpoint records it."""
        for module in self.modules():
            if isinstance(module, LayerNorm):
                module.keeps_autocast_dtype = keep


class LSTMLanguageModel(LanguageModel):
    """LSTM baseline with the same interface as GPT1.

    Output layer: project d_hidden -> d_embed, then tie to the token embedding (as GPT1 ties). An untied
    2048 x 40k softmax would add ~83M parameters and make the baseline larger than the Transformer in its
    output layer alone; tying also means the appended special-token rows serve input and output alike.
    """

    kind = LSTM
    groups_rows_by_length = False

    def __init__(self, config: LSTMConfig):
        super().__init__()
        self.config = config
        self.hidden_size = config.d_hidden
        self.tokens_embed = nn.Embedding(config.vocab_size, config.d_embed)
        self.drop = Dropout(config.dropout)
        self.lstm = nn.LSTM(config.d_embed, config.d_hidden, num_layers=config.n_layer, batch_first=True,
                            dropout=config.dropout if config.n_layer > 1 else 0.0)
        self.output_projection = nn.Linear(config.d_hidden, config.d_embed)
        nn.init.normal_(self.tokens_embed.weight, std=config.init_std)
        nn.init.normal_(self.output_projection.weight, std=config.init_std)
        nn.init.zeros_(self.output_projection.bias)
        # The LSTM keeps PyTorch's uniform(+-1/sqrt(d_hidden)) initialisation.

    def hidden_states(self, input_ids: torch.Tensor) -> torch.Tensor:
        """LSTM outputs (B, T, d_hidden) of the last layer."""
        output, _ = self.lstm(self.drop(self.tokens_embed(input_ids)))
        return output

    def output_features(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return self.output_projection(self.drop(hidden_states))


MODEL_KINDS: dict[str, tuple[type, type]] = {GPT1.kind: (GPT1, TransformerConfig),
                                              LSTMLanguageModel.kind: (LSTMLanguageModel, LSTMConfig)}
METADATA_KEY = "gpt1"  # the safetensors metadata entry that marks a file save_model wrote


def build_model(kind: str, config: Mapping[str, Any] | TransformerConfig | LSTMConfig) -> LanguageModel:
    """A freshly initialised model of `kind` (gpt1/kinds.py) from a config dict or dataclass."""
    if kind not in MODEL_KINDS:
        raise UserError(f"unknown model kind {kind!r}; use one of {sorted(MODEL_KINDS)}")
    model_class, config_class = MODEL_KINDS[kind]
    if not isinstance(config, config_class):
        allowed = [field.name for field in dataclasses.fields(config_class)]
        unknown = sorted(set(config) - set(allowed))
        if unknown:
            raise UserError(f"unknown {kind} model setting(s) {unknown}; allowed: {allowed}")
        config = config_class(**config)
    return model_class(config)


def save_model(model: LanguageModel, path: Path | str) -> None:
    """Write weights and the metadata {"kind", "config"} to one safetensors file, atomically."""
    safetensors_file.write(model, path, METADATA_KEY, {"kind": model.kind, "config": dataclasses.asdict(model.config)})


def load_model(path: Path | str, device: str | torch.device = "cpu") -> LanguageModel:
    """Rebuild the model saved by `save_model` (returned in eval mode; call .train() to train on)."""
    path = Path(path)
    entry, tensors = safetensors_file.read(
        path, METADATA_KEY, device, absent=f"model checkpoint {path} does not exist; train or import a model first",
        unreadable=f"{path} is not a readable safetensors checkpoint ({{error}}); re-create it",
        foreign=f"{path} has no gpt1 model metadata; save it with gpt1's save_model")
    try:
        described = json.loads(entry)
        model = build_model(described["kind"], described["config"]).to(device)
        missing, unexpected = model.load_state_dict(tensors, strict=False)
    except UserError as error:  # a kind or setting this version does not know
        raise UserError(f"{path}: {error}") from None
    except RuntimeError as error:  # a tensor whose shape is not the one its config gives
        raise UserError(f"{path} does not match its own config: {str(error).splitlines()[-1].strip()}") from None
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as error:
        raise UserError(f"{path} has unreadable gpt1 metadata ({type(error).__name__}: {error}); "
                        "re-create it with gpt1's save_model") from None
    if missing or unexpected:
        raise UserError(f"{path} does not match its own config: missing {missing}, unexpected {unexpected}")
    return model.eval()

