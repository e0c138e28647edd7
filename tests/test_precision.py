"""Fine-tuning's attention on CUDA leaves cuDNN's kernel out (it plans anew for every batch shape); the same
losses come out, and the choice holds for exactly the updates it wraps."""

from __future__ import annotations

import torch

from gpt1.model.lm import GPT1, TransformerConfig
from gpt1.train import precision


def test_many_shapes_keeps_cudnn_attention_out_each_time_it_is_entered_and_changes_no_loss():
    torch.manual_seed(0)
    model = GPT1(TransformerConfig(vocab_size=40, n_positions=16, n_layer=1, n_head=2, d_model=16, d_ff=32,
                                   embd_dropout=0.0, attn_dropout=0.0, resid_dropout=0.0))
    tokens = torch.randint(0, 40, (3, 13), generator=torch.Generator().manual_seed(1))
    plain = torch.autocast("cpu", dtype=torch.bfloat16)
    wrapped = precision._WithoutCudnnAttention(torch.autocast("cpu", dtype=torch.bfloat16))
    losses = {}
    for name, context in (("plain", plain), ("wrapped", wrapped)):
        for length in (13, 9):  # one object, entered once per batch shape as a training loop does
            with context:
                if name == "wrapped":
                    assert not torch.backends.cuda.cudnn_sdp_enabled()
                    assert torch.backends.cuda.flash_sdp_enabled() and torch.backends.cuda.mem_efficient_sdp_enabled()
                    assert torch.is_autocast_enabled("cpu")
                losses[name, length] = model(tokens[:, :length - 1], tokens[:, 1:length])
    assert torch.backends.cuda.cudnn_sdp_enabled() and not torch.is_autocast_enabled("cpu")
    for length in (13, 9):
        assert torch.equal(losses["plain", length], losses["wrapped", length])
    # Only bf16 on CUDA asks for it: a CPU or fp32 run gets its autocast (or nothing) unchanged.
    assert not isinstance(precision.autocast(torch.device("cpu"), "bfloat16", many_shapes=True),
                          precision._WithoutCudnnAttention)
