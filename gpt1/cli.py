"""One command line, `gpt1 <stage>`: the only thing dvc.yaml and the Snakefile call."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from gpt1.config import DEFAULT_PARAMS, load_params
from gpt1.errors import UserError

LOG_DIR = Path("logs")


def _download(args, params) -> None:
    from gpt1 import download

    download.run(params)


def _prepare(args, params) -> None:
    from gpt1 import prepare

    prepare.run(params)


def _bpe(args, params) -> None:
    from gpt1 import bpe

    if params.bpe.import_from:
        bpe.import_released(Path(params.bpe.import_from), params.bpe.merges)
    else:
        bpe.run(params.bpe.merges)


def _tokenize(args, params) -> None:
    from gpt1 import encode

    encode.run()


def _import_weights(args, params) -> None:
    from gpt1 import weights
    from gpt1.model import save_model

    model = weights.import_weights(args.source, n_head=args.n_head)
    save_model(model, args.out)
    logging.getLogger("gpt1.weights").info("wrote %s (%d parameters)", args.out, model.num_parameters())


STAGES = {
    "download": (_download, "fetch the corpus and task files (sha256-pinned, cached)"),
    "prepare": (_prepare, "clean, deduplicate, decontaminate and split the corpus; split the tasks"),
    "bpe": (_bpe, "train GPT-1's BPE on the training corpus"),
    "tokenize": (_tokenize, "encode the corpus splits to memory-mappable token arrays"),
    "import-weights": (_import_weights, "convert released GPT-1 weights (HF folder or OpenAI's npy files)"),
}


def _configure_logging(stage: str) -> None:
    LOG_DIR.mkdir(exist_ok=True)
    formatter = logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s")
    file_handler = logging.FileHandler(LOG_DIR / f"{stage}.log", mode="w")
    file_handler.setFormatter(formatter)
    console = logging.StreamHandler(sys.stderr)
    console.setFormatter(logging.Formatter(f"gpt1 {stage}: %(message)s"))
    logging.basicConfig(level=logging.INFO, handlers=[file_handler, console], force=True)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gpt1", description=__doc__)
    parser.add_argument("--params", type=Path, default=DEFAULT_PARAMS, help="parameters file (default: params.yaml)")
    commands = parser.add_subparsers(dest="stage", required=True, metavar="STAGE")
    parsers = {name: commands.add_parser(name, help=text, description=text) for name, (_, text) in STAGES.items()}
    importer = parsers["import-weights"]
    importer.add_argument("source", type=Path, help="folder: config.json + model.safetensors/pytorch_model.bin, "
                          "or params_shapes.json + params_0..9.npy")
    importer.add_argument("--out", type=Path, required=True, help="gpt1 checkpoint to write (.safetensors)")
    importer.add_argument("--n-head", type=int, default=12, help="heads (OpenAI's files do not record it)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler, _ = STAGES[args.stage]
    try:
        params = load_params(args.params)
        _configure_logging(args.stage)
        handler(args, params)
    except UserError as error:
        print(f"gpt1 {args.stage}: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
