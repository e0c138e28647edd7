"""Task heads on a pretrained language model, and the fine-tuning objective L3 = L2 + λ·L1.

The head reads the final hidden state at the extract token `[e]` (the last token of each sequence):
- classification / entailment: dropout -> linear -> class logits;
- similarity: the two orders' states are summed, then dropout -> linear (1 unit + MSE for a regression
  target such as STS-B, class logits for MRPC/QQP). A regression head predicts the target standardised
  by the training labels' mean and spread (`set_target_scale`) and returns it in the labels' units: MSE
  on raw targets is as large as their variance, which a 0-1 target keeps far below the LM loss in nats, so beside
  λ·L1 its L2 would hardly steer the shared layers;
- multiple choice: dropout -> linear -> one scalar per candidate, softmax over the candidates. As the
  released code, one dropout mask per example is shared by all its candidates.
The auxiliary LM loss L1 is the next-token loss over the task's own tokens, masked to real tokens; for
similarity only over the `[s] a $ b [e]` order, whose tokens the other order merely repeats.
Both models (GPT1, LSTMLanguageModel) work here: they share `hidden_states` and `lm_loss`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from gpt1.model.lm import LanguageModel
from gpt1.data.records import TaskSpec
from gpt1.model.transforms import EncodedExample

PAD_ID = 0  # any id works: padding sits after `[e]`, causal models never look ahead, and it is masked


@dataclass
class Batch:
    input_ids: torch.Tensor  # (N, T) every sequence of every example, right-padded
    lengths: torch.Tensor  # (N,) real tokens; the extract token sits at lengths - 1
    example_index: torch.Tensor  # (N,) which example (0..B-1) each sequence belongs to
    slot_index: torch.Tensor  # (N,) its place in that example (similarity order, candidate number)
    labels: torch.Tensor  # (B,) long class/candidate index, or float regression target
    slots: int  # the most sequences any example has (1, 2, or the most candidates)
    # `lengths` as Python ints, kept on the host: grouping rows by length needs them, and reading them back
    # from a GPU every batch would make the host wait for the device.
    host_lengths: tuple[int, ...]

    def to(self, device: torch.device | str) -> "Batch":
        """The tensors on `device`. To a GPU they go from pinned (page-locked) memory without blocking, so the
        host goes on queueing work while they copy; pinning is skipped elsewhere (it needs a GPU, and gains
        nothing on a CPU)."""
        device = torch.device(device)
        return Batch(**{name: _moved(value, device) if isinstance(value, torch.Tensor) else value
                        for name, value in vars(self).items()})


def _moved(tensor: torch.Tensor, device: torch.device) -> torch.Tensor:
    if device.type == "cuda" and tensor.device.type == "cpu":
        return tensor.pin_memory().to(device, non_blocking=True)
    return tensor.to(device)


def collate(examples: Sequence[EncodedExample], regression: bool) -> Batch:
    sequences = [sequence for example in examples for sequence in example.sequences]
    length = max(len(sequence) for sequence in sequences)
    input_ids = torch.full((len(sequences), length), PAD_ID, dtype=torch.long)
    for row, sequence in enumerate(sequences):
        input_ids[row, : len(sequence)] = torch.tensor(sequence, dtype=torch.long)
    example_index = [i for i, example in enumerate(examples) for _ in example.sequences]
    slot_index = [slot for example in examples for slot in range(len(example.sequences))]
    labels = [example.label for example in examples]
    return Batch(
        input_ids=input_ids,
        lengths=torch.tensor([len(sequence) for sequence in sequences]),
        example_index=torch.tensor(example_index),
        slot_index=torch.tensor(slot_index),
        labels=torch.tensor(labels, dtype=torch.float32 if regression else torch.long),
        slots=max(len(example.sequences) for example in examples),
        host_lengths=tuple(len(sequence) for sequence in sequences),
    )


# What one more forward pass costs, in padded tokens' worth of work: running a batch's sequences as a few
# groups of similar length saves padding but pays each pass's fixed costs again.
PASS_COST_TOKENS = 64


def length_groups(lengths: Sequence[int], pass_cost: int = PASS_COST_TOKENS) -> list[list[int]]:
    """Rows grouped by length so that padded tokens plus `pass_cost` per group are fewest: the optimal
    split of the rows sorted by length into consecutive groups (dynamic programming; ties keep fewer groups).
    Depends on the lengths alone, so a batch is always split the same way."""
    order = sorted(range(len(lengths)), key=lambda row: (lengths[row], row))
    best = [0] + [None] * len(order)  # best[i]: cost of the i shortest rows
    cut = [0] * (len(order) + 1)
    for end in range(1, len(order) + 1):
        for start in range(end):
            cost = best[start] + (end - start) * lengths[order[end - 1]] + pass_cost
            if best[end] is None or cost < best[end]:
                best[end], cut[end] = cost, start
    groups, end = [], len(order)
    while end > 0:
        groups.append(order[cut[end]:end])
        end = cut[end]
    return groups[::-1]


def hidden_states(model: LanguageModel, batch: "Batch") -> torch.Tensor:
    """`model.hidden_states` of a right-padded batch, run as length groups (`length_groups`) on a CPU. Both models are
    causal, so a sequence's states do not depend on the padding after it: grouping changes the work, not the
    result (up to rounding; dropout masks are drawn per group). Padded positions hold zeros."""
    lengths = batch.host_lengths
    # Only a CPU pays for padding in proportion: a GPU runs a fine-tuning pass in about the time of its kernel
    # launches, so there every extra group costs a whole pass and padded tokens cost next to nothing.
    grouped = model.groups_rows_by_length and batch.input_ids.device.type == "cpu"
    groups = length_groups(lengths) if grouped else [list(range(len(lengths)))]
    if len(groups) == 1:
        return model.hidden_states(batch.input_ids)
    states = None
    for rows in groups:
        longest = max(lengths[row] for row in rows)
        index = torch.tensor(rows, device=batch.input_ids.device)
        part = model.hidden_states(batch.input_ids[index, :longest])
        if states is None:
            states = part.new_zeros(batch.input_ids.shape + part.shape[-1:])
        states[index, :longest] = part
    return states


def lm_loss(model: LanguageModel, hidden: torch.Tensor, batch: Batch, rows: torch.Tensor | None = None) -> torch.Tensor:
    """Mean next-token loss over real tokens: position t predicts token t + 1 while t + 1 < length.
    `rows` (bool, N) limits it to some sequences (similarity: one order, so each task token counts once)."""
    positions = torch.arange(hidden.shape[1] - 1, device=hidden.device)
    mask = positions[None, :] < (batch.lengths[:, None] - 1)
    if rows is not None:
        mask = mask & rows[:, None]
    # Only where a target exists: padding would otherwise dominate the cost of the vocab projection.
    return model.lm_loss(hidden[:, :-1][mask], batch.input_ids[:, 1:][mask])


class TaskModel(nn.Module):
    """A language model plus the task's output layer W_y (the only new weights besides special tokens)."""

    def __init__(self, language_model: LanguageModel, spec: TaskSpec, classifier_dropout: float):
        super().__init__()
        self.language_model = language_model
        self.family = spec.family
        self.regression = spec.is_regression
        outputs = 1 if spec.family == "multiple_choice" or self.regression else len(spec.labels)
        self.classifier_dropout = classifier_dropout
        self.head = nn.Linear(language_model.hidden_size, outputs)
        nn.init.normal_(self.head.weight, std=0.02)  # as the released code's clf weights
        nn.init.zeros_(self.head.bias)
        # Regression targets as (label - mean) / scale; saved with the weights. Identity until set.
        self.register_buffer("target_mean", torch.zeros(()))
        self.register_buffer("target_scale", torch.ones(()))

    def set_target_scale(self, labels: Sequence[float]) -> None:
        """Standardise a regression head's target by the training labels (never empty: transforms checks
        every split); a constant set keeps scale 1."""
        values = torch.tensor([float(label) for label in labels], dtype=torch.float64)
        spread = values.std(correction=0).item()
        self.target_mean.fill_(values.mean().item())
        self.target_scale.fill_(spread if spread > 0 else 1.0)

    def parameter_groups(self, weight_decay: float) -> list[dict]:
        """The LM's groups plus the head's: decay only on >= 2-D weights."""
        groups = self.language_model.parameter_groups(weight_decay)
        groups[0]["params"].append(self.head.weight)
        groups[1]["params"].append(self.head.bias)
        return groups

    def _dropout(self, features: torch.Tensor, rows: torch.Tensor, examples: int) -> torch.Tensor:
        """Dropout with one mask per example, shared by that example's rows (its candidates)."""
        if not self.training or self.classifier_dropout == 0:
            return features
        keep = 1.0 - self.classifier_dropout
        mask = torch.bernoulli(torch.full((examples, features.shape[-1]), keep, device=features.device))
        return features * mask[rows] / keep

    def _output(self, features: torch.Tensor) -> torch.Tensor:
        """W_y in fp32 even under bf16 autocast: a bf16 score has 8 significant bits, coarser than the
        spread of a regression head's early predictions and than small logit differences."""
        with torch.autocast(features.device.type, enabled=False):
            return self.head(features.float())

    def forward(self, batch: Batch, with_lm: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Scores (B, classes), (B,) for regression, or (B, candidates); and the LM loss if asked."""
        hidden = hidden_states(self.language_model, batch)
        extract = hidden[torch.arange(hidden.shape[0], device=hidden.device), batch.lengths - 1]
        examples = batch.labels.shape[0]
        if self.family == "multiple_choice":
            extract = self._dropout(extract, batch.example_index, examples)
            flat = self._output(extract).squeeze(-1)
            scores = flat.new_full((examples, batch.slots), float("-inf"))  # missing candidates never win
            scores = scores.index_put((batch.example_index, batch.slot_index), flat)
        else:
            # Similarity sums its two orders; the other families have one sequence per example.
            summed = extract.new_zeros(examples, extract.shape[-1]).index_add(0, batch.example_index, extract)
            rows = torch.arange(examples, device=summed.device)
            scores = self._output(self._dropout(summed, rows, examples))
            if self.regression:
                scores = scores.squeeze(-1) * self.target_scale + self.target_mean
        if not with_lm:
            return scores, None
        # Similarity's second order repeats the first one's tokens: the LM reads each task token once.
        # Multiple choice keeps every candidate, as the released code (the context counts k times there).
        rows = batch.slot_index == 0 if self.family == "similarity" else None
        return scores, lm_loss(self.language_model, hidden, batch, rows)

    def task_loss(self, scores: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """L2: MSE for a regression target (in standardised units), cross-entropy over classes or candidates."""
        if self.regression:
            return F.mse_loss((scores.float() - self.target_mean) / self.target_scale,
                              (labels.float() - self.target_mean) / self.target_scale)
        return F.cross_entropy(scores.float(), labels)

    def loss(self, batch: Batch, lm_coef: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """L3 = L2 + λ·L1 (λ = 0 skips the LM projection entirely); returns (L3, L2, L1 or None)."""
        scores, language_loss = self(batch, with_lm=lm_coef > 0)
        task = self.task_loss(scores, batch.labels)
        total = task if language_loss is None else task + lm_coef * language_loss
        return total, task, language_loss
