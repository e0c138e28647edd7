"""What a row of gpt1/pipeline/stage_table.py holds: a stage's help, its kind of work, the options naming its jobs and
where their values come from, and its dvc.yaml entry's data dependencies, the params its jobs differ by and outputs,
each with the note that says why it is there. gpt1/pipeline/dvc_yaml.py writes dvc.yaml from the rows.

A path or params key that differs from job to job holds DVC's placeholder for the job's value (`each("task")`,
`KEY`, `ITEM`): rows build paths by calling gpt1/layout.py with it (`layout.task_tokens(each("task"))` is
data/task_tokens/${item.task}), and DVC puts each job's own value in its place.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Literal, Union

Work = Literal["light", "text", "training"]
# Where the values of a job's option come from: a params key holding a list (a dvc.yaml `matrix` axis), or a mapping
# {value: item} spelled in the row (a `foreach`: KEY is the option's value in a job, ITEM its item).
Axis = Union[str, dict]
KEY, ITEM = "${key}", "${item}"


def each(axis: str) -> str:
    """A matrix axis's value in one job, as dvc.yaml spells it: `each("task")` is `${item.task}`."""
    return f"${{item.{axis}}}"


def flag(option: str) -> str:
    """The command-line flag of an option named by its argparse dest: flag("one_off") -> "--one-off"."""
    return "--" + option.replace("_", "-")


@dataclass(frozen=True)
class Entry:
    """A value of dvc.yaml (a dependency, a params key, a plot, a section) with the note that says why it is there,
    written as a comment: beside a list item where the line stays within 120 characters, above it otherwise."""
    value: object
    note: str


@dataclass(frozen=True)
class Out:
    """One output of a stage's dvc.yaml entry: under `outs`, `metrics` or `plots`; `cache=False` keeps it out of DVC's
    cache (small files, committed with git); `persist=True` leaves it in place while the stage runs."""
    path: Path | str
    kind: Literal["outs", "metrics", "plots"] = "outs"
    cache: bool = True
    persist: bool = False
    note: str | None = None


@dataclass(frozen=True)
class OneOff:
    """How `--seed` makes a fine-tuning command a one-off run of one seed, outside the DAG's outputs (under
    layout.ONE_OFF, and logged beside where that run's folder goes: logs/<its path below results/one-off>.log)."""
    # The option that, with --seed, names one run of the job (layer-transfer --layers, transfer-curve --step); None
    # where a job's runs differ by seed alone (finetune: a job is one method on one task).
    option: str | None
    run: Callable[[dict], Path]  # the one-off run's folder (gpt1/layout.py), from the command's options by name


@dataclass(frozen=True)
class StageSpec:
    help: str  # the command's help, and the stage's `desc` in dvc.yaml (`dvc stage list`)
    # light: one core. text: every core, through worker processes (gpt1/files/parallel.py). training: every core
    # (torch threads), the GPUs a job is given, and (pretrain) the processes torchrun launches.
    work: Work = "light"
    options: bool = False  # the module has add_arguments(parser); imported only for these, so the CLI stays cheap
    # {option (its argparse dest): its values} for the options that name one job of the stage, in order: each is a
    # `--<option> <the job's value>` of the command and an axis of its dvc.yaml matrix (or its foreach)
    jobs: dict[str, Axis] = field(default_factory=dict)
    one_off: OneOff | None = None
    report: str | None = None  # the category its results/ files get in `snakemake --report`
    why: str | None = None  # what dvc.yaml says above the entry: why the stage is cut as it is
    always_changed: bool = False  # DVC runs it every time (it checks what DVC cannot see)
    deps: tuple[Path | str | Entry, ...] = ()  # the data it reads; its gpt1 modules are derived from its imports
    # Params that differ from job to job (the pretrain job's own model section, `${item}`), which no setting's role can
    # name; every other key a stage reads is added from the roles the schema declares (gpt1/params/roles.py).
    params: tuple[str | Entry, ...] = ()
    outputs: tuple[Out, ...] = ()  # every job's, each spelled once with the job's placeholders

    @property
    def trains(self) -> bool:
        return self.work == "training"

    @property
    def uses_every_core(self) -> bool:
        return self.work != "light"
