"""What `gpt1 plan` counts of evaluation's CPU work: each task's encode_task job and the analyses over every run.

The rates are measured, not assumed: tools/measure_evaluation_scale.py ran encode-task on tasks of QQP's and MNLI's
sizes and the analyses over predictions of the paper profile's test sets, methods and seeds
(docs/measurements/evaluation-scale.json, which this module reads).

- encode_task: one process per task, the DAG's jobs side by side on the cores. Its time is counted per training
  example, the task's dev and test rows included in the proportion the measured tasks had (the slower of the two, a
  pair task's); its peak memory is the measured bytes per training row (the larger task's) times the task's rows:
  the examples it holds, and a fixed part (Python, spaCy, the BPE) that this overstates for a small task. Passages of several
  hundred words (RACE) take longer a row than the measured pairs.
- the analyses (Table 5's intervals, the majority checks, Tables 2-4 and `gpt1 compare`'s bootstrap), one process
  each, scaled by the runs they read (test sets x methods x seeds) from the measurement's. The bootstrap's count of
  resamples adapts to each interval, so the time follows the scores as well as the runs: the measured figure is for
  synthetic scores of the methods' typical spread.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gpt1.commands.plan_data import read_measurement

MEASUREMENT = Path(__file__).resolve().parents[2] / "docs" / "measurements" / "evaluation-scale.json"
ANALYSES = ("table_5_intervals_s", "majority_checks_s", "tables_2_4_s", "compare_s")


@dataclass(frozen=True)
class EvaluationRates:
    seconds_per_example: float  # encode_task, per training example, its dev and test rows included
    gb_per_example: float  # encode_task's peak memory per training example
    analysis_seconds: float  # every analysis over the measurement's runs
    analysis_runs: int
    analysis_peak_gb: float


def read_rates(path: Path = MEASUREMENT) -> EvaluationRates | None:
    """The measured rates, or None where the measurement file is not at hand."""
    if (measured := read_measurement(path)) is None:
        return None
    encode, analysis = measured["encode"], measured["analysis"]
    tasks = [encode[name] for name in encode if isinstance(encode[name], dict)]
    per_example = max(task["seconds"] / task["rows"]["train"] for task in tasks)
    per_row_gb = max(task["bytes_per_training_row"] for task in tasks) / 1e9
    return EvaluationRates(per_example, per_row_gb, sum(analysis[key] for key in ANALYSES),
                           analysis["runs"], analysis["peak_rss_gb"])


def evaluation_figures(params, examples: dict[str, int], cores: int, rates: EvaluationRates) -> dict:
    """encode_task's core-hours, its wall hours on `cores` cores (the longest job, or all of them spread over the
    cores, whichever is longer) and its largest job's peak memory; the analyses' hours. `examples`: each trained
    task's training examples (what fine-tuning uses, as gpt1/commands/plan_tasks.py counts them)."""
    jobs = {task: count * rates.seconds_per_example / 3600 for task, count in examples.items()}
    longest = max(jobs, key=jobs.__getitem__, default=None)
    core_hours = sum(jobs.values())
    runs = len(params.data.scored_tasks) * len(params.finetune.methods) * len(params.finetune.seeds)
    return dict(encode_core_hours=core_hours, encode_wall_hours=max(jobs.get(longest, 0.0), core_hours / cores),
                encode_longest=longest, encode_peak_gb=max(examples.values(), default=0) * rates.gb_per_example,
                analysis_runs=runs, analysis_hours=rates.analysis_seconds * runs / rates.analysis_runs / 3600,
                analysis_peak_gb=rates.analysis_peak_gb)
