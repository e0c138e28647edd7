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

    bpe.run(params.bpe.merges)


def _tokenize(args, params) -> None:
    from gpt1 import encode

    encode.run()


STAGES = {
    "download": (_download, "fetch the corpus and task files (sha256-pinned, cached)"),
    "prepare": (_prepare, "clean, deduplicate, decontaminate and split the corpus; split the tasks"),
    "bpe": (_bpe, "train GPT-1's BPE on the training corpus"),
    "tokenize": (_tokenize, "encode the corpus splits to memory-mappable token arrays"),
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
    for name, (_, help_text) in STAGES.items():
        commands.add_parser(name, help=help_text, description=help_text)
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
