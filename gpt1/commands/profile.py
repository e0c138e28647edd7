"""`gpt1 profile`: the `dvc exp run -S ...` line that applies profiles, or (--yaml) the parameters they compose."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", type=Path, nargs="+", help="profiles, e.g. profiles/paper.yaml")
    parser.add_argument("--yaml", action="store_true", help="print the composed parameters instead")


def main(args, params) -> None:
    from gpt1.params import profiles

    print(profiles.describe(args.files, args.params, as_yaml=args.yaml))
