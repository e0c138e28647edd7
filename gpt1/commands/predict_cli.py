"""`gpt1 predict`'s command line: its options, and the call to gpt1/commands/predict.py, which predicts.

A module apart because predict.py imports torch at its top (tests call its functions), and every tool's options are
read when the CLI builds its parser: `gpt1 download` must not load torch.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from gpt1 import layout


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run", type=Path, required=True,
                        help="a fine-tuning run folder with model.safetensors, e.g. "
                        "results/finetune/full/rt_polarity/seed1")
    parser.add_argument("--input", type=Path, default=Path("-"),
                        help="JSONL in the task's fields (or plain text lines for classification); - is stdin")
    parser.add_argument("--bpe", type=Path, default=layout.BPE, help="the BPE the run was trained with")


def main(args, params) -> None:
    from gpt1.commands import predict

    predict.main(args)
