"""`gpt1 export-weights`: a gpt1 Transformer checkpoint in transformers' or OpenAI's released layout."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from gpt1 import layout
from gpt1.errors import UserError
from gpt1.kinds import TRANSFORMER


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", type=Path, default=layout.pretrained_model(TRANSFORMER),
                        help="gpt1 Transformer checkpoint (default: the pretrained Transformer)")
    parser.add_argument("--format", choices=["hf", "openai"], required=True,
                        help="hf: OpenAIGPTLMHeadModel folder (+ tokenizer); openai: params_shapes.json + npy")
    parser.add_argument("--out", type=Path, required=True,
                        help="folder to write: new, empty, or an earlier export (replaced whole)")
    parser.add_argument("--force", action="store_true",
                        help="replace --out whole even if it holds files gpt1 did not write")
    parser.add_argument("--bpe", type=Path, default=layout.BPE,
                        help="hf: the BPE folder whose vocab.json + merges.txt go with the weights")


def main(args, params) -> None:
    from gpt1.files.atomic import claim_folder

    claim_folder(args.out, args.force)  # before torch's import, which takes seconds: a refusal comes at once
    from gpt1.model import hf_export, weights
    from gpt1.model.lm import GPT1, load_model

    model = load_model(args.model)
    if not isinstance(model, GPT1):
        raise UserError(f"{args.model} is a {model.kind} model; only the Transformer has the released layouts")
    if args.format == "hf":
        hf_export.export_hf(model, args.out, args.bpe)
    else:
        weights.export_openai(model, args.out)
    logging.getLogger("gpt1.model.weights").info("wrote %s (%s layout)", args.out, args.format)
