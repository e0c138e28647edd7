"""`gpt1 plan`'s command line: its options, and the call to gpt1/commands/plan_report.py, which prints the plan.

A module apart because plan.py and plan_report.py are the plan's library (tests call them) and plan_report.py
imports pandas at its top, while every tool's options are read when the CLI builds its parser, which stays cheap.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--gpus", type=int, default=1, help="GPUs to spread the work over (default: 1)")
    parser.add_argument("--throughput", type=Path, default=None, metavar="FILE",
                        help="a `gpt1 benchmark --output` JSON to take the FLOP rate from (default: the paper model "
                        "measured on an H200, docs/results/gpu/)")
    parser.add_argument("--cores", type=int, default=None,
                        help="CPU cores the data stages run on (default: every core this machine lets the command use)")
    parser.add_argument("--json", type=Path, default=None, metavar="FILE", help="also write the figures as JSON here")


def main(args, params) -> None:
    from gpt1.commands import plan_report

    import os

    cores = args.cores if args.cores is not None else len(os.sched_getaffinity(0))
    plan_report.main(params, gpus=args.gpus, throughput=args.throughput, output=args.json, cores=cores)
