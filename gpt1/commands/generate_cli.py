"""`gpt1 generate`'s command line: its options, and the call to gpt1/commands/generate.py, which samples.

A module apart because generate.py imports torch at its top (tests call its sampling functions), and every tool's
options are read when the CLI builds its parser: `gpt1 download` must not load torch.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from gpt1 import layout
from gpt1.kinds import TRANSFORMER


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", type=Path, default=layout.pretrained_model(TRANSFORMER),
                        help="gpt1 checkpoint (.safetensors; pretraining checkpoints too) or a released-weights folder")
    parser.add_argument("--prompt", default="", help="text to continue; - reads it from stdin (default: none)")
    parser.add_argument("--max-new-tokens", type=int, default=50)
    parser.add_argument("--temperature", type=float, default=1.0, help="0: greedy decoding")
    parser.add_argument("--top-k", type=int, default=None, help="sample among the k likeliest tokens only")
    parser.add_argument("--seed", type=int, default=0, help="the same seed gives the same text")
    parser.add_argument("--bpe", type=Path, default=layout.BPE,
                        help="the model's BPE folder (the released encoder_bpe_40000.json pair for released weights)")


def main(args, params) -> None:
    from gpt1.commands import generate

    generate.main(args)
