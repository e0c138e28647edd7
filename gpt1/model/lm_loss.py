"""The language-model loss without the full logits: output layer and cross-entropy fused, in row chunks.

`F.cross_entropy(F.linear(h, W), targets)` materialises (tokens x vocab) logits in fp32, then a
log-softmax, then the same-sized gradients in backward: for GPT-1 (vocab 40,478) and the CPU default's
smaller vocabulary alike, those passes over memory can cost as much as the output matmul itself. Here each chunk of
rows is projected, its loss summed and its gradient (softmax - one-hot) turned straight into the
gradients of `h` and `W` while the chunk is still in cache; backward only scales them by the incoming
gradient. Same value and gradients (fp32: within rounding; bf16 autocast: matmuls in bf16, softmax in
fp32, as autocast would do), and deterministic: the chunking is fixed.
"""

from __future__ import annotations

import torch

from gpt1.errors import UserError

IGNORE_INDEX = -100
# The two ways to compute it: "chunked" (below) never holds the logits; "dense" is the plain
# F.cross_entropy(F.linear(h, W)), which holds (tokens x vocab) logits but hands torch.compile one graph to fuse
# (a GPU with memory to spare may run it faster: `gpt1 benchmark --lm-loss dense` measures it).
LM_LOSS_KINDS = ("chunked", "dense")
# Rows per chunk. CPU: few enough that a chunk's fp32 logits stay in cache while its gradients are formed;
# GPUs: fewer, larger matmuls (4,096 x 40,478 fp32 = 0.66 GB, the paper's vocabulary).
CPU_CHUNK_ROWS = 256
GPU_CHUNK_ROWS = 4096


def _compute_dtype(tensor: torch.Tensor) -> torch.dtype:
    """The matmul dtype autocast would pick here (bf16 under bf16 autocast), else the tensor's own."""
    device_type = tensor.device.type
    if torch.is_autocast_enabled(device_type):
        return torch.get_autocast_dtype(device_type)
    return tensor.dtype


def _chunk_rows(rows: int, device: torch.device, chunk_rows: int | None) -> int:
    if chunk_rows is None:
        chunk_rows = GPU_CHUNK_ROWS if device.type == "cuda" else CPU_CHUNK_ROWS
    return max(1, min(rows, chunk_rows))


def _chunked_loss(hidden, weight, targets, chunk_rows, compute_dtype, grad_hidden, grad_weight, vocab_size):
    """Mean loss over valid targets; fills grad_hidden / grad_weight (when given) with its gradients. Rows of
    `weight` past vocab_size are padding: their logits are masked out, so their gradient is 0."""
    valid = targets != IGNORE_INDEX
    count = valid.sum().clamp(min=1).float()
    weight_c = weight.to(compute_dtype)
    total = torch.zeros((), dtype=torch.float32, device=hidden.device)
    for start in range(0, hidden.shape[0], chunk_rows):
        stop = min(start + chunk_rows, hidden.shape[0])
        rows = hidden[start:stop].to(compute_dtype)
        chunk_targets, chunk_valid = targets[start:stop].clamp(min=0), valid[start:stop]
        logits = (rows @ weight_c.t()).float()
        if vocab_size < logits.shape[1]:
            logits[:, vocab_size:] = float("-inf")
        log_normaliser = torch.logsumexp(logits, dim=-1)
        target_logits = logits.gather(1, chunk_targets[:, None]).squeeze(1)
        total += ((log_normaliser - target_logits) * chunk_valid).sum()
        if grad_hidden is None and grad_weight is None:
            continue
        # d(mean loss)/d(logits) = (softmax - one_hot(target)) / count on valid rows, 0 elsewhere.
        grad_logits = logits.sub_(log_normaliser[:, None]).exp_()
        grad_logits[torch.arange(stop - start, device=logits.device), chunk_targets] -= 1.0
        grad_logits = grad_logits.mul_((chunk_valid / count)[:, None]).to(compute_dtype)
        if grad_hidden is not None:
            grad_hidden[start:stop] = grad_logits @ weight_c
        if grad_weight is not None:
            grad_weight += grad_logits.t() @ rows
    return total / count


class _LinearCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, hidden, weight, targets, chunk_rows, compute_dtype, vocab_size):
        grad_hidden = torch.empty_like(hidden) if ctx.needs_input_grad[0] else None
        grad_weight = torch.zeros_like(weight, dtype=torch.float32) if ctx.needs_input_grad[1] else None
        loss = _chunked_loss(hidden, weight, targets, chunk_rows, compute_dtype, grad_hidden, grad_weight, vocab_size)
        ctx.save_for_backward(grad_hidden, grad_weight)
        return loss

    @staticmethod
    def backward(ctx, grad_output):
        grad_hidden, grad_weight = ctx.saved_tensors
        scale = grad_output.float()
        return (None if grad_hidden is None else grad_hidden * scale.to(grad_hidden.dtype),
                None if grad_weight is None else grad_weight * scale, None, None, None, None)


def linear_cross_entropy(hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor,
                         chunk_rows: int | None = None, vocab_size: int | None = None) -> torch.Tensor:
    """Mean of cross_entropy(hidden @ weight.T, targets) over targets != -100 (0 when there are none).

    hidden (N, d), weight (V, d), targets (N,) long. Equal to F.cross_entropy(F.linear(hidden, weight),
    targets, ignore_index=-100) without ever holding the (N, V) logits or their gradient. Rows of weight past
    `vocab_size` (default: none) are padding, never predicted.
    """
    if hidden.dim() != 2 or targets.shape != hidden.shape[:1]:
        raise ValueError(f"expected hidden (N, d) and targets (N,), got {tuple(hidden.shape)} and "
                         f"{tuple(targets.shape)}")
    rows = _chunk_rows(hidden.shape[0], hidden.device, chunk_rows)
    compute_dtype = _compute_dtype(hidden)
    vocab_size = weight.shape[0] if vocab_size is None else vocab_size
    if torch.is_grad_enabled() and (hidden.requires_grad or weight.requires_grad):
        return _LinearCrossEntropy.apply(hidden, weight, targets, rows, compute_dtype, vocab_size)
    with torch.no_grad():  # evaluation: the same chunked sum, no gradient work
        return _chunked_loss(hidden, weight, targets, rows, compute_dtype, None, None, vocab_size)


def dense_linear_cross_entropy(hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor,
                               vocab_size: int | None = None) -> torch.Tensor:
    """The same mean loss as linear_cross_entropy through the full logits (softmax in fp32, as autocast does), and
    0 when no target is valid, as there."""
    logits = torch.nn.functional.linear(hidden, weight)[:, :vocab_size].float()
    summed = torch.nn.functional.cross_entropy(logits, targets, ignore_index=IGNORE_INDEX, reduction="sum")
    return summed / (targets != IGNORE_INDEX).sum().clamp(min=1).float()


def checked_lm_loss_kind(kind: str) -> str:
    if kind not in LM_LOSS_KINDS:
        raise UserError(f"unknown LM loss {kind!r}; use one of {', '.join(LM_LOSS_KINDS)}")
    return kind


def mean_lm_loss(kind: str, hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor,
                 vocab_size: int | None = None) -> torch.Tensor:
    """The mean LM loss computed the `kind` way (LM_LOSS_KINDS); weight's rows past vocab_size are padding."""
    if kind == "dense":
        return dense_linear_cross_entropy(hidden, weight, targets, vocab_size)
    return linear_cross_entropy(hidden, weight, targets, vocab_size=vocab_size)
