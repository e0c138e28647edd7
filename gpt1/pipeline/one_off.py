"""A one-off fine-tuning run: `--seed` with the option that names one run of a fine-tuning command (`--task`,
`--layers`, `--step`) trains that seed of that run alone, under results/one-off, outside the DAG's outputs."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

from gpt1.errors import UserError
from gpt1.layout import ONE_OFF, RESULTS
from gpt1.pipeline.stage_spec import flag


def one_off(args) -> bool:
    """Whether a fine-tuning command is a one-off run, written under ONE_OFF: `--seed`, with the option that names
    one of its job's runs where its runs differ by more than the seed (`args.one_off_option`, which the CLI sets from
    gpt1/pipeline/stage_table.py: layer-transfer's `layers`, transfer-curve's `step`; none for finetune). Without
    them, the stage's job runs every run and seed that params lists, into its DVC output folder; one of the two
    alone is one clear error."""
    option = args.one_off_option
    if option is None:
        return args.seed is not None
    named = getattr(args, option) is not None
    if args.seed is None and not named:
        return False
    if args.seed is not None and named:
        return True
    raise UserError(f"--seed and {flag(option)} go together: a one-off run of one seed, into {ONE_OFF}; leave both "
                    f"out for the stage's own job (every {flag(option).removeprefix('--')} and seed that params.yaml "
                    "lists)")


def one_off_commands(args) -> Callable[..., str] | None:
    """How each run of the job `args` names is run alone: `(seed, value=None) -> its command line`, `value` that of
    the command's one-off option where it has one (`args.one_off_option`: layers, step). The stage table spells it
    (`args.one_off_command`, set by the CLI), so a model card says what the CLI takes; None for arguments the CLI did
    not parse (the card then names the library's call)."""
    spell = getattr(args, "one_off_command", None)
    if spell is None:
        return None

    def command(seed: int, value=None) -> str:
        named = {args.one_off_option: value} if args.one_off_option else {}
        return spell({**vars(args), **named, "seed": seed})
    return command


def selected_runs(args, listed: Sequence, seeds: Sequence[int]) -> tuple[list, list[int], Path]:
    """What a fine-tuning command runs: (values of its one-off option, seeds, the results root their runs go
    under). The stage's job: every value and seed params lists, under RESULTS; a one-off (`one_off`): the one value
    and seed named, under ONE_OFF."""
    if one_off(args):
        return [getattr(args, args.one_off_option)], [args.seed], ONE_OFF
    return list(listed), list(seeds), RESULTS
