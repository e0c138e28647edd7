"""`gpt1 compare A B`: did an experiment's change help beyond the noise of the test set?

For every fine-tuning method and task both sides ran, B − A (×100, each task's first metric) with a 95 % two-level
bootstrap interval (gpt1/eval/intervals.py, Table 5's resample count and generator seed) and the verdict computed
from it. The same test examples are resampled for both sides, and so are the seeds where both sides ran the same
ones: an experiment changes one knob, and seed s seeds both sides' head, data order and dropout alike, so seed s of A
and seed s of B are a pair, as a test row is; the same runs on both sides then read exactly 0 [0, 0]. Where the
sides ran different seeds, each side's are drawn on their own (as Table 5's methods are). The `seeds` column says
which; where a side ran one seed, the row says its interval covers the test examples only.

A side is an experiment name, a git revision or `workspace`. A revision's files are read from git and DVC's cache
(DVCFileSystem) into a temporary folder laid out as the project: nothing is checked out, the workspace is not
touched. Two sides are compared only on the same test rows (the same test split, sampled alike).
"""

from __future__ import annotations

import hashlib
import tempfile
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np
import pandas as pd

from gpt1.data.records import TaskSpec
from gpt1.data.task_data import seeded_subset
from gpt1.errors import UserError
from gpt1.eval.intervals import (BOUND_SD, EDGE_SDS, NOISE, SEED_DESIGNS, Interval, Predictions, paired_differences,
                                 read_predictions, resampled_scores)
from gpt1.layout import FINETUNE as FINETUNE_FOLDER, RESULTS, TASK_SPEC, TASKS, run_predictions, split_file
from gpt1.params.files import DEFAULT_PARAMS

WORKSPACE = "workspace"
PREDICTIONS = run_predictions("test")
TEST_SPLIT = split_file("task", "test").name  # a task's test split, as prepare names it
FINETUNE = RESULTS / FINETUNE_FOLDER  # results/finetune: <method>/<task>/seed<S>/
AVERAGE = "avg"
# What B − A's interval says, from Interval.verdict (above 0: "supported").
VERDICTS = {"supported": "better", "reversed": "worse", "not supported": "no difference",
            "at the edge": "at the edge"}
COLUMNS = ["method", "task", "metric", "a", "b", "difference", "low", "high", "verdict", "noise", "seeds",
           "resamples"]


@dataclass(frozen=True)
class Side:
    """One side of a comparison: its name and a folder laid out as the project (results/finetune, data/tasks,
    params.yaml) holding what it ran."""

    name: str
    root: Path

    def runs(self) -> dict[str, dict[str, list[Path]]]:
        """{method: {task: [seed folders]}} of the fine-tuning runs that wrote test predictions."""
        found: dict[str, dict[str, list[Path]]] = {}
        # <method>/<task>/seed<S>, and a task scored with another's models inside that task's folder
        # (<method>/mnli/mnli_mm/seed<S>)
        for pattern in (f"*/*/seed*/{PREDICTIONS}", f"*/*/*/seed*/{PREDICTIONS}"):
            for path in sorted((self.root / FINETUNE).glob(pattern)):
                task, method = path.parent.parent.name, path.relative_to(self.root / FINETUNE).parts[0]
                found.setdefault(method, {}).setdefault(task, []).append(path.parent)
        if not found:
            raise UserError(f"{self.name} has no fine-tuning runs ({FINETUNE}/<method>/<task>/seed<S>/{PREDICTIONS}): "
                            "the finetune stage makes them (`dvc exp run`, or `dvc repro finetune` in the workspace)")
        return found

    def params(self) -> dict:
        """The side's own params.yaml, read as written (a revision's may predate today's schema)."""
        import yaml

        path = self.root / DEFAULT_PARAMS
        if not path.is_file():
            raise UserError(f"{self.name} has no {DEFAULT_PARAMS}")
        return yaml.safe_load(path.read_text(encoding="utf-8"))

    def order(self) -> tuple[list[str], list[str]]:
        """(methods, tasks) in the order of the side's finetune.methods and data.tasks, each task followed by those
        scored with its models: Table 5's. A revision from before `methods` was the key calls it `variants`."""
        from gpt1.data.registry import scored_tasks

        raw = self.params()
        methods = raw["finetune"]["methods"] if "methods" in raw["finetune"] else raw["finetune"]["variants"]
        return list(methods), list(dict.fromkeys(scored_tasks(list(raw["data"]["tasks"]))))

    def spec(self, task: str) -> TaskSpec:
        return TaskSpec.from_file(self._task_file(task, TASK_SPEC))

    def test_rows(self, task: str) -> tuple[str, tuple[int, ...]]:
        """Which test examples the side's runs scored: the test split's sha256 and the rows the seeded sample of
        finetune.max_eval_examples took (gpt1/data/task_data.py)."""
        split = self._task_file(task, TEST_SPLIT).read_bytes()
        raw = self.params()
        rows = seeded_subset(list(range(split.count(b"\n"))), raw["finetune"]["max_eval_examples"], raw["seed"],
                             task, "test")
        return hashlib.sha256(split).hexdigest(), tuple(rows)

    def _task_file(self, task: str, name: str) -> Path:
        path = self.root / TASKS / task / name
        if not path.is_file():
            raise UserError(f"{self.name} has no {TASKS / task / name}: the prepare stage makes it")
        return path


def _resolve(project: Path, name: str):
    """(DVCFileSystem at the revision, its commit) for an experiment name or a git revision."""
    from dvc.exceptions import DvcException
    from dvc.fs import DVCFileSystem
    from dvc.repo import Repo

    try:
        with Repo(str(project)) as repo:
            commit = _commit_of(repo, name)
    except DvcException as error:
        raise UserError(f"{project} is not a DVC project ({error})") from None
    if commit is None:
        raise UserError(f"'{name}' is neither an experiment (`dvc exp list`), a git revision nor `{WORKSPACE}`; "
                        "an experiment run elsewhere: `dvc exp pull <git remote> <name>` first")
    return DVCFileSystem(url=str(project), rev=commit), commit


def _commit_of(repo, name: str) -> str | None:
    # DVC's public API names an experiment only through dvc.api.exp_show, which collects every experiment's params
    # and metrics and gives a short commit; resolve_name, internal, is what `dvc exp` itself resolves names with.
    # tests/test_pipeline.py's compare of a pulled experiment by name fails if an upgrade changes it.
    from dvc.repo.experiments.utils import resolve_name
    from dvc.scm import SCMError
    from scmrepo.exceptions import SCMError as GitError

    try:  # an empty repository has no experiments or revisions: scmrepo raises there too
        reference = resolve_name(repo.scm, [name]).get(name)
        return repo.scm.get_ref(str(reference)) if reference is not None else repo.scm.resolve_rev(name)
    except (SCMError, GitError):
        return None


def _copy_revision(project: Path, name: str, into: Path) -> None:
    """params.yaml, every run's test predictions and every task's spec and test split at revision `name`."""
    fs, commit = _resolve(project, name)
    wanted = [DEFAULT_PARAMS.as_posix()]
    try:
        for folder, names in ((FINETUNE, (PREDICTIONS,)), (TASKS, (TASK_SPEC, TEST_SPLIT))):
            if fs.isdir(folder.as_posix()):
                wanted += [path.lstrip("/") for path in fs.find(folder.as_posix()) if Path(path).name in names]
        for path in wanted:
            if fs.exists(path):
                (into / path).parent.mkdir(parents=True, exist_ok=True)
                fs.get_file(path, str(into / path))
    except (FileNotFoundError, OSError) as error:
        raise UserError(f"{name} ({commit[:7]}): DVC's cache lacks its files ({error}); "
                        f"{_fetch_hint(project, name)}") from None
    except Exception as error:  # DVC's own errors for a missing cache object are many; name the fix once
        if type(error).__module__.startswith(("dvc", "dvc_data", "dvc_objects", "scmrepo")):
            raise UserError(f"{name} ({commit[:7]}): its files cannot be read from DVC's cache ({error}); "
                            f"{_fetch_hint(project, name)}") from None
        raise


def _fetch_hint(project: Path, name: str) -> str:
    """The fix for a revision whose outputs are not in this machine's cache, as this repository allows it."""
    from dvc.repo import Repo

    with Repo(str(project)) as repo:
        remotes = dict(repo.config.get("remote", {}))
    if remotes:
        return (f"fetch them with `dvc pull` (a branch or commit) or `dvc exp pull <git remote> {name}` "
                "(an experiment)")
    return ("no DVC remote is set, so only outputs made on this machine are in its cache (a commit's dvc.lock may "
            "name another machine's): commit your own run's dvc.lock after `dvc repro` (`git commit dvc.lock -m "
            "baseline`) and compare against it, e.g. `gpt1 compare HEAD <experiment>`")


@contextmanager
def opened(project: Path, names: list[str]) -> Iterator[list[Side]]:
    """The sides named, each as a folder laid out as the project; revisions in temporary folders, removed after."""
    with ExitStack() as stack:
        sides = []
        for name in names:
            if name == WORKSPACE:
                sides.append(Side(name, Path(project)))
                continue
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="gpt1-compare-")))
            _copy_revision(Path(project), name, folder)
            sides.append(Side(name, folder))
        yield sides


def _score(metric: str, predictions: Predictions, classes: int) -> float:
    """The side's score on the whole test set, the mean over its seeds, ×100 (row 0 of a bootstrap: every row once)."""
    return 100 * float(resampled_scores(metric, predictions, np.arange(len(predictions.labels))[None], classes)[0])


def compare(first: Side, second: Side, resamples: int | None = None) -> pd.DataFrame:
    """One row per (method, task) both sides ran, and per method the average over those tasks: A's and B's scores,
    B − A with its 95 % interval (×100) and the verdict. `resamples`: a fixed count (None: as many as the bounds
    need, gpt1/eval/intervals.py)."""
    runs_a, runs_b = first.runs(), second.runs()
    methods, tasks_in_order = first.order()
    rows = []
    for method in _ordered([method for method in runs_a if method in runs_b], methods):
        tasks = _ordered([task for task in runs_a[method] if task in runs_b[method]], tasks_in_order)
        pairs, scores, classes, seeds_paired = {}, {}, {}, []
        for task in tasks:
            metric, other = first.spec(task).primary_metric, second.spec(task).primary_metric
            if other != metric:
                raise UserError(f"task '{task}': {first.name} scores it by {metric}, {second.name} by "
                                f"{other}; they are not compared")
            classes[task] = len(first.spec(task).labels)  # F1 is binary for 2 labels, macro beyond, as evaluation
            if first.test_rows(task) != second.test_rows(task):
                raise UserError(f"task '{task}': {first.name} and {second.name} scored different test rows (its "
                                "test split, seed or finetune.max_eval_examples differ); they are not compared")
            a, b = read_predictions(runs_a[method][task]), read_predictions(runs_b[method][task])
            pairs[task] = (metric, b, a)  # B − A on the same resampled rows
            if _seed_names(runs_a[method][task]) == _seed_names(runs_b[method][task]):
                seeds_paired.append(task)
            scores[task] = (metric, _score(metric, a, classes[task]), _score(metric, b, classes[task]))
        if not pairs:
            continue
        intervals: dict[str, Interval] = paired_differences(pairs, resamples, classes, seeds_paired=seeds_paired)
        if len(tasks) > 1:
            scores[AVERAGE] = ("mean of tasks", *(float(np.mean([scores[t][i] for t in tasks])) for i in (1, 2)))
        for column, (metric, score_a, score_b) in scores.items():
            interval = intervals[column]
            rows.append({"method": method, "task": column, "metric": metric, "a": score_a, "b": score_b,
                         "difference": interval.difference, "low": interval.low, "high": interval.high,
                         "verdict": VERDICTS[interval.verdict], "noise": interval.noise, "seeds": interval.seeds,
                         "resamples": interval.resamples})
    if not rows:
        raise UserError(f"{first.name} and {second.name} share no fine-tuning method and task to compare")
    return pd.DataFrame(rows, columns=COLUMNS)


def _seed_names(run_dirs: list[Path]) -> tuple[str, ...]:
    """The seed folders' names (seed<S>), in the order their predictions are stacked: `Side.runs` lists both sides
    sorted alike, so two sides that ran the same seeds hold seed S at the same index."""
    return tuple(Path(folder).name for folder in run_dirs)


def _ordered(names: list[str], order: list[str]) -> list[str]:
    """`names` in `order`, any others after them, sorted."""
    return sorted(names, key=lambda name: (order.index(name) if name in order else len(order), name))


SEEDS_FOOTNOTE = (f"*seeds*: {SEED_DESIGNS[True]}: both sides ran the same seeds, and each resample draws the same "
                  "seed indices for both (seed s drives the head's initialisation, the data order and dropout on "
                  f"both sides), so the same runs on both sides read 0 [0, 0]; {SEED_DESIGNS[False]}: the sides ran "
                  "different seeds, and each side's are drawn on their own. An avg row is "
                  f"{SEED_DESIGNS[True]} when each of its tasks is.")


def markdown(table: pd.DataFrame, first: str, second: str) -> str:
    lines = [f"B − A, ×100: B = {second}, A = {first}. [95 % interval: two-level bootstrap, the same test examples "
             "resampled for both sides, then the seeds (see *seeds*), as many resamples as each bound needs to move by at "
             f"most {BOUND_SD} points with another draw (the CSV's *resamples*)]; better / worse: the interval lies "
             f"above / below 0; at the edge: a bound lies within {EDGE_SDS:g} of those deviations of 0.", "",
             "| method | task | metric | A | B | B − A [95 % interval] | verdict | seeds |", "|" + "---|" * 8]
    lines += [f"| {row.method} | {row.task} | {row.metric} | {row.a:.1f} | {row.b:.1f} | {row.difference:+.1f} "
              f"[{row.low:+.1f}, {row.high:+.1f}] | {row.verdict}{'' if row.noise == NOISE[True] else ' ‡'} | "
              f"{row.seeds} |" for row in table.itertuples()]
    lines += ["", SEEDS_FOOTNOTE]
    if any(table.noise != NOISE[True]):
        lines += ["", "‡ a side ran one seed: the interval covers the test examples only, not the spread between "
                  "seeds."]
    return "\n".join(lines) + "\n"


def csv(table: pd.DataFrame) -> str:
    return table.to_csv(index=False, float_format="%.2f")
