"""`gpt1 import-weights`: released GPT-1 weights (transformers' folder or OpenAI's npy files) as a gpt1 checkpoint."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", type=Path, help="folder: config.json + model.safetensors/pytorch_model.bin, "
                        "or params_shapes.json + params_0..9.npy")
    parser.add_argument("--out", type=Path, required=True, help="gpt1 checkpoint to write (.safetensors)")
    parser.add_argument("--n-head", type=int, default=12, help="heads (OpenAI's files do not record it)")
    parser.add_argument("--force", action="store_true", help="replace --out even if it is not a gpt1 checkpoint")


def main(args, params) -> None:
    from gpt1.files.atomic import claim_file
    from gpt1.model import safetensors_file, weights
    from gpt1.model.lm import METADATA_KEY, save_model

    claim_file(args.out, args.force, lambda path: safetensors_file.has_entry(path, METADATA_KEY), "a gpt1 checkpoint")
    model = weights.import_weights(args.source, n_head=args.n_head)
    save_model(model, args.out)
    logging.getLogger("gpt1.model.weights").info("wrote %s (%d parameters)", args.out, model.num_parameters())
