"""One command line, `gpt1 <stage>`: the only thing dvc.yaml and the Snakefile call.

Each DAG stage is a module of gpt1/stages with `main(args, params)` and, where the stage takes options,
`add_arguments(parser)`; it is imported only when its command runs, so `gpt1 download` never loads torch.
The other commands (profile, benchmark, plan, import-, export-weights, fetch-released, generate, predict, compare)
are tools, not stages.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from functools import partial
from pathlib import Path

from gpt1.commands.tool_table import TOOLS, tool_module_name
from gpt1.pipeline import one_off
from gpt1.params.schema import load_params
from gpt1.params.trace import trace_if_asked
from gpt1.params.files import DEFAULT_PARAMS
from gpt1.errors import UserError
from gpt1.pipeline.stage_table import STAGES, job_log, module_name, one_off_command


def stage_module(command: str):
    return importlib.import_module(f"gpt1.stages.{module_name(command)}")


def tool_module(command: str):
    return importlib.import_module(tool_module_name(command))


def log_path(args) -> Path:
    """The job's log file (gpt1/pipeline/stage_table.py), from its command-line arguments."""
    return job_log(args.stage, vars(args))


def _configure_logging(args) -> None:
    """The job's log file and stderr. Under torchrun only rank 0 writes the file (every rank opening it with "w"
    would truncate it), appending where `gpt1 pretrain` launched the processes and began the log itself."""
    from gpt1.train.launch import LAUNCHED

    stage, rank = args.stage, int(os.environ.get("RANK", "0"))
    console = logging.StreamHandler(sys.stderr)
    console.setFormatter(logging.Formatter(f"gpt1 {stage}: %(message)s" if rank == 0 else
                                           f"gpt1 {stage} (rank {rank}): %(message)s"))
    handlers: list[logging.Handler] = [console]
    if rank == 0:
        path = log_path(args)
        path.parent.mkdir(parents=True, exist_ok=True)
        file_handler = logging.FileHandler(path, mode="a" if os.environ.get(LAUNCHED) else "w")
        file_handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        handlers.append(file_handler)
    logging.basicConfig(level=logging.INFO, handlers=handlers, force=True)


def _add_command(commands, name: str, text: str) -> argparse.ArgumentParser:
    # argparse %-formats a help string (not a description): a literal % ("95 %") is written %% there.
    return commands.add_parser(name, help=text.replace("%", "%%"), description=text)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gpt1", description=__doc__)
    parser.add_argument("--params", type=Path, default=DEFAULT_PARAMS, help="parameters file (default: params.yaml)")
    parser.add_argument("--profile", type=Path, action="append", default=[], metavar="FILE",
                        help="a profile merged over the parameters (only the keys it changes); repeat to compose")
    commands = parser.add_subparsers(dest="stage", required=True, metavar="STAGE")
    # Only the stages that take options are imported here, and every tool's module (none loads torch at import
    # time: a tool's main imports its work), so building the parser stays cheap.
    for name, spec in STAGES.items():
        command = _add_command(commands, name, spec.help)
        if spec.options:
            stage_module(name).add_arguments(command)
        if spec.one_off:
            # how a one-off run is named, and spelled for its model card (gpt1/pipeline/one_off.py)
            command.set_defaults(one_off_option=spec.one_off.option, one_off_command=partial(one_off_command, name))
    for name, tool in TOOLS.items():
        tool_module(name).add_arguments(_add_command(commands, name, tool.help))
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    stage, tool = STAGES.get(args.stage), TOOLS.get(args.stage)
    handler = (tool_module(args.stage) if tool else stage_module(args.stage)).main
    try:
        params = None if tool and not tool.params else load_params(args.params, args.profile)
        if stage and stage.one_off:
            one_off.one_off(args)  # a half-given one-off is an error before its log (named by both) is opened
        if stage or tool.log:  # a tool whose output is its result writes no log
            _configure_logging(args)
        if stage:
            trace_if_asked(params)  # GPT1_PARAMS_TRACE set: note the params keys this stage reads
        handler(args, params)
    except UserError as error:
        print(f"gpt1 {args.stage}: error: {error}", file=sys.stderr)
        return error.exit_code
    except FileNotFoundError as error:
        if not stage:
            raise
        # A stage's input is the output of an earlier stage (dvc.yaml): it has not run, or its output was removed.
        print(f"gpt1 {args.stage}: error: {error.filename or error} not found; run the stages before "
              f"`{args.stage}` first (`dvc repro {module_name(args.stage)}` runs what it needs)",
              file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
