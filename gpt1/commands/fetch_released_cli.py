"""`gpt1 fetch-released`'s command line: its options, and the call to gpt1/commands/fetch_released.py, which fetches.

A module apart because fetch_released.py's `main(source, out, ...)` is the fetch itself, which tests call with
plain values; the tool's `main(args, params)` takes the parsed command line, as every tool's does.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from gpt1.commands.fetch_released import DEFAULT_OUT, HUB_REPOSITORY, HUB_REVISION  # plain constants; no torch


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", nargs="?", default=HUB_REPOSITORY,
                        help="a folder in OpenAI's layout (params_shapes.json + params_0..9.npy + "
                        "encoder_bpe_40000.json + vocab_40000.bpe) or transformers' (config.json + model.safetensors "
                        "or pytorch_model.bin + "
                        f"vocab.json + merges.txt), or a Hugging Face repository id (default: {HUB_REPOSITORY})")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help=f"folder to write (default: {DEFAULT_OUT}/, which profiles/released.yaml reads)")
    parser.add_argument("--revision", default=HUB_REVISION,
                        help=f"the hub's revision: a branch, tag or commit (default: {HUB_REVISION})")
    parser.add_argument("--n-head", type=int, default=12, help="heads (OpenAI's files do not record it)")
    parser.add_argument("--force", action="store_true", help="replace --out whole even if gpt1 did not write it")


def main(args, params) -> None:
    from gpt1.commands import fetch_released

    fetch_released.main(args.source, args.out, revision=args.revision, force=args.force, n_head=args.n_head)
