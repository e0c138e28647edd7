"""`gpt1 compare`: B - A for every method and task two experiments ran, as a table (gpt1/eval/compare.py has the
work)."""

from __future__ import annotations

import argparse
from pathlib import Path

from gpt1.errors import UserError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("a", metavar="A", help="an experiment name, a git revision or `workspace`")
    parser.add_argument("b", metavar="B", help="the same for B; the table shows B - A")
    parser.add_argument("--output", type=Path, default=None, help="also write the table here (.md or .csv)")
    parser.add_argument("--force", action="store_true", help="replace --output if it exists")
    parser.add_argument("--resamples", type=int, default=None,
                        help="a fixed bootstrap resample count (default: as many as each bound needs to move by at "
                             "most 0.05 points with another draw)")


def main(args, params) -> None:
    from gpt1.eval import compare
    from gpt1.files.atomic import atomic_write_text

    if args.output is not None:
        if args.output.suffix not in (".md", ".csv"):
            raise UserError(f"--output {args.output}: name a .md or a .csv file")
        if args.output.exists() and not args.force:
            raise UserError(f"--output {args.output} exists; choose another name, or --force to replace it")
    if args.resamples is not None and args.resamples < 1:
        raise UserError(f"--resamples {args.resamples}: give a positive count, or leave it out")
    with compare.opened(Path.cwd(), [args.a, args.b]) as (first, second):
        table = compare.compare(first, second, args.resamples)
    text = compare.markdown(table, args.a, args.b)
    print(text, end="")
    if args.output is not None:
        atomic_write_text(args.output, compare.csv(table) if args.output.suffix == ".csv" else text)
