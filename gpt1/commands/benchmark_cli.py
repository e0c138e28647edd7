"""`gpt1 benchmark`'s command line: its options, and the call to gpt1/commands/benchmark.py, which measures.

A module apart because benchmark.py imports torch at its top (it is the benchmark's library, which tests and
tools/ call), and every tool's options are read when the CLI builds its parser: `gpt1 download` must not load torch.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--configs", nargs="+", choices=["default", "mid", "paper"], default=None,
                        help="named configs (default: default mid on a CPU, paper on CUDA); paper: 12 x 768, 512 "
                        "positions, vocabulary 40,478, no data folder needed")
    parser.add_argument("--batch", type=int, default=None,
                        help="sequences per step (default: pretrain.micro_batch_size)")
    parser.add_argument("--steps", type=int, default=5, help="timed steps per round")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds per model")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--compile", action="store_true", help="torch.compile both models")
    parser.add_argument("--compile-mode", default=None,
                        help="torch.compile's mode (implies --compile), e.g. reduce-overhead (CUDA graphs) or "
                        "max-autotune-no-cudagraphs")
    parser.add_argument("--lm-loss", choices=["chunked", "dense"], default="chunked",
                        help="our model's LM loss: chunked (never holds the logits) or dense (plain cross-entropy)")
    parser.add_argument("--nondeterministic", dest="deterministic", action="store_false",
                        help="allow CUDA's non-deterministic kernels (training asks for deterministic ones)")
    parser.add_argument("--no-reference", dest="reference", action="store_false",
                        help="time our model alone (to compare settings of ours; no ratio)")
    parser.add_argument("--pad-vocab-to", type=int, default=None, metavar="N",
                        help="pad our output layer's rows to a multiple of N (1: none; default: 64 on CUDA, none on "
                        "a CPU)")
    parser.add_argument("--breakdown", action="store_true",
                        help="also profile our step: its time in matrix products, attention, optimizer, copies, the "
                        "rest")
    parser.add_argument("--bf16-layer-norm", action="store_true",
                        help="our LayerNorms return bf16 under bf16 autocast (statistics still in fp32), so the "
                        "residual stream between blocks is bf16, not fp32")
    parser.add_argument("--dropout", type=float, default=None,
                        help="every dropout rate of both models (default: the config's; 0 measures what dropout costs)")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads for both models")
    parser.add_argument("--dtype", choices=["auto", "float32", "bfloat16"], default="auto",
                        help="autocast for both models (auto: bf16 on CUDA, fp32 on CPU)")
    parser.add_argument("--output", type=Path, default=None, help="also write the results as JSON here")


def main(args, params) -> None:
    from gpt1.commands import benchmark

    benchmark.main(params, configs=args.configs, batch=args.batch, steps=args.steps, rounds=args.rounds,
                   device=args.device, compile=args.compile, threads=args.threads, dtype=args.dtype,
                   output=args.output, compile_mode=args.compile_mode, lm_loss=args.lm_loss,
                   reference=args.reference, deterministic=args.deterministic, pad_vocab_to=args.pad_vocab_to,
                   breakdown=args.breakdown, dropout=args.dropout,
                   bf16_layer_norm=args.bf16_layer_norm)
