"""The paper's Tables 2-4 beside ours: `full`'s test score on each selected task, with its 95 % interval, next
to the paper's number for the task it is (the paper profile) or stands in for (the embedded default).

The paper's numbers, and which paper result each registered task is set beside (`COMPARED_WITH`), are
gpt1/paper.py's: the paper profile's tasks are the paper's own (their test split is ours, not GLUE's hidden one:
docs/data.md); the embedded default's are stand-ins, other data or the same data at another scale, so a difference measures the
distance from the paper's scale, never a failed or successful reproduction.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from gpt1.data.paper_tasks import PAPER_TASKS
from gpt1.data.records import TaskSpec
from gpt1.eval.intervals import (BOUND_SD, NOISE, RESAMPLES, RNG_SEED, TWO_SIDED, average, read_predictions,
                                 resample, side_block)
from gpt1.eval.run_files import run_metrics
from gpt1.layout import finetune_run
from gpt1.methods import FULL
from gpt1.paper import COMPARED_WITH, GLUE_TASKS, PAPER_GLUE, PAPER_SCORES, TABLE_TITLES

METHOD = FULL  # the paper's headline method: Transformer, pretrained, auxiliary LM objective


def without_paper_result(tasks) -> list[str]:
    """The selected tasks set beside no paper result: a user's own (data.user_tasks), which the tables list apart."""
    return [task for task in tasks if task not in COMPARED_WITH]


COLUMNS = ["table", "paper_task", "paper", "task", "relation", "metric", "seeds", "mean", "std", "low", "high",
           "noise", "difference", "resamples"]


def is_stand_in(task: str) -> bool:
    """Other data, or the paper's data at another scale, than the paper task it is set beside."""
    return task not in PAPER_TASKS


def comparison(results_dir: Path, specs: dict[str, TaskSpec], seeds: list[int],
               resamples: int | None = None) -> tuple[pd.DataFrame, dict | None]:
    """A row per selected task: ours (mean, std over seeds and the two-level bootstrap interval of the seeds' mean:
    test examples and seeds resampled, ×100, on the paper's metric) beside the paper's score; and the GLUE mean when
    every GLUE task is the paper's own."""
    apart = without_paper_result(specs)
    compared = {task: spec for task, spec in specs.items() if task not in apart}
    runs = {task: [finetune_run(task, METHOD, seed, results_dir, spec.model_of) for seed in seeds]
            for task, spec in compared.items()}
    blocks, per_seed = {}, {}
    for task, spec in compared.items():
        metric = PAPER_SCORES[COMPARED_WITH[task]].metric
        per_seed[task] = [100 * run_metrics(run, f"the finetune stage (method {METHOD})")["test"][metric]
                          for run in runs[task]]
        predictions = read_predictions(runs[task])
        blocks[task] = (len(predictions.labels), side_block(metric, predictions, len(spec.labels)))
    resampled = resample(blocks, np.random.default_rng(RNG_SEED), TWO_SIDED, resamples)
    rows = []
    for task in compared:
        paper_task = COMPARED_WITH[task]
        paper = PAPER_SCORES[paper_task]
        low, high = resampled[task].bounds
        mean = float(np.mean(per_seed[task]))
        std = float(np.std(per_seed[task], ddof=1)) if len(seeds) > 1 else 0.0
        rows.append({"table": paper.table, "paper_task": paper_task, "paper": paper.value, "task": task,
                     "relation": "stand-in" if is_stand_in(task) else "paper task", "metric": paper.metric,
                     "seeds": len(seeds), "mean": mean, "std": std, "low": low, "high": high,
                     "noise": NOISE[len(seeds) > 1], "difference": mean - paper.value,
                     "resamples": len(resampled[task].values)})
    paper_order = {name: place for place, name in enumerate(PAPER_SCORES)}  # the paper's column order
    frame = pd.DataFrame(rows, columns=COLUMNS).sort_values(["table", "paper_task"], key=lambda column: column.map(
        paper_order) if column.name == "paper_task" else column, kind="stable").reset_index(drop=True)
    own_glue = frame[(frame.relation == "paper task") & frame.paper_task.isin(GLUE_TASKS)]
    if set(own_glue.paper_task) != set(GLUE_TASKS):
        return frame, None
    glue = average([resampled[task] for task in own_glue.task])  # each task resampled on its own
    return frame, {"mean": float(own_glue["mean"].mean()), "interval": tuple(glue.bounds), "paper": PAPER_GLUE}


def markdown(frame: pd.DataFrame, glue: dict | None, seeds: int, apart: list[str] = ()) -> str:
    """`apart`: selected tasks with no paper result to stand beside (without_paper_result), named at the end."""
    lines = [
        "# The paper's Tables 2–4 beside ours",
        "",
        f"Ours: `{METHOD}` (Transformer w/ aux LM), test score ×100 on the paper's metric, mean ± std over {seeds} "
        f"seed(s), and its 95 % interval [2.5th, 97.5th percentile over two-level bootstrap resamples (at least "
        f"{RESAMPLES:,}, more until each bound's Monte-Carlo standard deviation is at most {BOUND_SD} points: the "
        "count is the `resamples` column of results/paper_tables.csv): the test examples drawn with replacement, then "
        "the seeds, the drawn seeds' mean on each; with one seed, the test examples only]. The paper: its test sets (GLUE's evaluation server), one "
        "117M-parameter model pretrained on BooksCorpus. A stand-in is other data, or the same data at another "
        "scale: its difference says how far this scale is from the paper's, not whether the paper reproduces.",
    ]
    for table, title in TABLE_TITLES.items():
        rows = frame[frame.table == table]
        lines += ["", f"## {title}", ""]
        if rows.empty:
            lines.append("No selected task is, or stands in for, a task of this table.")
        else:
            lines += ["| paper task | paper | our task | ours | 95 % interval | ours − paper |", "|" + "---|" * 6]
            for row in rows.itertuples():
                name = f"{row.task} (stand-in)" if row.relation == "stand-in" else row.task
                lines.append(f"| {row.paper_task} ({row.metric}) | {row.paper:.1f} | {name} | {row.mean:.1f} ± "
                             f"{row.std:.1f} | [{row.low:.1f}, {row.high:.1f}] | {row.difference:+.1f} |")
            if table == 4 and glue is not None:
                low, high = glue["interval"]
                lines.append(f"| GLUE (ours: the nine tasks' mean; the paper: leaderboard score) | {glue['paper']:.1f} "
                             f"| all nine | {glue['mean']:.1f} | [{low:.1f}, {high:.1f}] | "
                             f"{glue['mean'] - glue['paper']:+.1f} |")
        missing = [f"{name} {score.value:.1f}" for name, score in PAPER_SCORES.items()
                   if score.table == table and name not in set(rows.paper_task)]
        if missing:
            lines += ["", "Not selected in this profile: " + ", ".join(missing) + "."]
    if apart:
        lines += ["", "## Your own tasks", "", "No paper result to stand beside (their scores are in Table 5, "
                  "results/ablation.md): " + ", ".join(apart) + "."]
    return "\n".join(lines) + "\n"
