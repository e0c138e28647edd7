"""How many seeds Table 5 needs: what each seed costs in the main job and how wide the intervals get with 3, 5, 8.

    python tools/seed_budget.py --seeds 1 2 3 4 5 6 7 8 --counts 3 5 8

Run it in a copy of a project where `dvc repro` has finished (the default's main job), with its results/finetune
removed: it fine-tunes every Table 5 job (method × task) again with all of `--seeds`, one process a job as the
finetune stage runs it (`gpt1 finetune`, with a profile that sets finetune.seeds), into results/finetune. The first
seeds repeat the main job's runs byte for byte; every job's log gives each seed's own seconds. Then it computes
Table 5's intervals (gpt1/eval/analysis.py, the two-level bootstrap) on the first 3, 5 and 8 seeds. It writes what it
measured to docs/measurements/seed-budget.json beside the machine (tools/measure.py's record): per job its wall time
and each seed's seconds, the finetune stage's time at each count estimated from those parts (a job's time outside
its seeds, plus its mean seed's seconds times the count), and the intervals' widths.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measure import FOLDER, clock, commit, machine, write_record  # noqa: E402

SEED_SECONDS = re.compile(r"/ seed (\d+): test .*; seconds: ([\d.]+) model .*?, ([\d.]+) training, ([\d.]+) evaluating")


def train(methods: list[str], tasks: list[str], seeds: list[int]) -> list[dict]:
    """Each (method, task) job with every seed; its wall time and each seed's seconds."""
    jobs = []
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", dir=".", prefix="seed-budget-") as profile:
        profile.write(json.dumps({"finetune": {"seeds": seeds}}))
        profile.flush()
        for method in methods:
            for task in tasks:
                command = ["gpt1", "--profile", profile.name, "finetune", "--method", method, "--task", task]
                start = time.monotonic()
                done = subprocess.run(command, capture_output=True, text=True)
                wall = time.monotonic() - start
                if done.returncode != 0:
                    sys.exit(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
                trained = {int(seed): round(float(model) + float(training) + float(evaluating), 1)
                           for seed, model, training, evaluating in SEED_SECONDS.findall(done.stderr)}
                jobs.append({"method": method, "task": task, "wall_s": round(wall, 1), "seed_seconds": trained})
                print(f"{method} / {task}: {wall:.1f} s, seeds trained {trained}", file=sys.stderr)
    return jobs


def stage_seconds(jobs: list[dict], count: int) -> float:
    """The finetune stage's seconds at `count` seeds, one job after another: each job's time outside its seeds
    (start-up, reading the task and the model) plus its mean seed's seconds times `count`."""
    total = 0.0
    for job in jobs:
        per_seed = list(job["seed_seconds"].values())
        total += job["wall_s"] - sum(per_seed) + count * float(np.mean(per_seed))
    return total


def widths(methods: list[str], tasks: list[str], seeds: list[int], counts: list[int], draws: int) -> dict:
    """Per count: each comparison's interval (full − method, per task and on average) and the average's width; and,
    with `draws` generator seeds, how far each bound moves with the bootstrap's own draw (lowest and highest)."""
    from gpt1 import layout
    from gpt1.data.records import TaskSpec
    from gpt1.eval.analysis import method_intervals

    specs = {task: TaskSpec.from_file(layout.task_spec(task, layout.TASKS)) for task in tasks}
    result = {}
    for count in counts:
        intervals = method_intervals(layout.RESULTS, specs, methods, seeds[:count])
        result[str(count)] = {
            "seeds": seeds[:count],
            "mean_width_of_the_average": round(float(np.mean([by["avg"].high - by["avg"].low
                                                              for by in intervals.values()])), 2),
            "intervals": {f"full - {method}": {column: {"difference": round(interval.difference, 2),
                                                        "low": round(interval.low, 2), "high": round(interval.high, 2),
                                                        "width": round(interval.high - interval.low, 2),
                                                        "verdict": interval.verdict}
                                               for column, interval in by.items()}
                          for method, by in intervals.items()}}
        drawn = [method_intervals(layout.RESULTS, specs, methods, seeds[:count], rng_seed=generator)
                 for generator in range(draws)]
        result[str(count)]["bounds_over_generator_seeds"] = {
            f"full - {method}": {column: {"low": [round(min(d[method][column].low for d in drawn), 2),
                                                  round(max(d[method][column].low for d in drawn), 2)],
                                          "high": [round(min(d[method][column].high for d in drawn), 2),
                                                   round(max(d[method][column].high for d in drawn), 2)],
                                          "verdicts": sorted({d[method][column].verdict for d in drawn})}
                                 for column in by}
            for method, by in intervals.items()}
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", required=True, help="every seed, the main job's first")
    parser.add_argument("--counts", type=int, nargs="+", required=True, help="how many of them to compare")
    parser.add_argument("--skip-training", action="store_true", help="the runs exist: only compute the widths")
    parser.add_argument("--generator-seeds", type=int, default=6,
                        help="bootstrap generator seeds to show how far the bounds move with the draw itself")
    args = parser.parse_args(argv)
    from gpt1.params.schema import load_params

    params = load_params()
    methods, tasks = list(params.finetune.methods), [t for t in params.data.tasks if params.data.model_of(t) is None]
    target = FOLDER / "seed-budget.json"
    if args.skip_training:  # the timings, their machine and commit stay those of the run that measured them
        timed = ({key: value for key, value in json.loads(target.read_text()).items()
                 if key in ("commit", "date", "machine", "exit_status", "wall_s", "jobs", "finetune_stage")}
                 if target.is_file() else {})
    else:
        jobs = train(methods, tasks, args.seeds)
        timed = {"commit": commit(), "date": time.strftime("%Y-%m-%d"), "machine": machine(), "exit_status": 0,
                 "wall_s": round(sum(job["wall_s"] for job in jobs), 1), "jobs": jobs,
                 "finetune_stage": {str(count): {"seconds": round(stage_seconds(jobs, count), 1),
                                                 "clock": clock(stage_seconds(jobs, count))} for count in args.counts}}
    record = {"counts": args.counts, "precision": "fp32", **timed,
              "widths": widths(methods, [*params.data.scored_tasks], args.seeds, args.counts, args.generator_seeds)}
    write_record(target, record)
    print(json.dumps(record.get("finetune_stage", {}), indent=2))
    print(json.dumps({count: entry["mean_width_of_the_average"] for count, entry in record["widths"].items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
