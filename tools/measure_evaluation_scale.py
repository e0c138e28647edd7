"""The paper's tasks and evaluation at their sizes: `encode-task` on tasks of QQP's and MNLI's training sizes, and
the analysis over predictions of the paper profile's test sizes for every task, method and seed it declares; the
time and peak memory of each, and how far the bootstrap's bounds move with its generator's seed.

    python tools/measure_evaluation_scale.py evaluation-scale --bpe data/bpe

The rows are synthetic and of the right shape: each task's family, labels and test rows as the paper profile's
(TEST_ROWS: its upstream test files, GLUE's dev files standing in for its private test sets), sentences from
tools/synthetic_corpus.py's prose. Each part runs in a child process of its own, so its peak memory (the child's
own high-water mark, VmHWM) is its own:

- encode: the encode-task stage's work (`load_task_data`, then `write_task`) on a task of QQP's 363,846 training
  pairs and one of MNLI's 392,702, with the BPE given (--bpe: a `gpt1 bpe` output folder), each task in a child of
  its own that starts from the prepared files: its peak memory over its training rows is its bytes per training row;
- analysis: predictions files for the paper profile's 13 test sets, 4 methods and 3 seeds (finetune.seeds) as the
  finetune stage writes them, then what the ablation and paper-tables stages compute from them (Table 5's intervals,
  each method against the majority class, Tables 2–4) and `gpt1 compare`'s bootstrap (seeds paired) of each method's
  runs against themselves in another seed order (so that the two sides differ, as two experiments' do);
- bootstrap_precision: two of Table 5's intervals (the largest test set's and the noisiest's) drawn with 10 generator seeds:
  the standard deviation of each bound over the seeds beside the one the bootstrap estimates for itself.

It writes docs/measurements/NAME.json beside the machine (tools/measure.py's record).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import measure  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# The paper profile's test sets (data.tasks, mnli scored on mnli_mm too): rows of the upstream files that become them.
TEST_ROWS = {"cola": 1_043, "sst2": 872, "mrpc": 1_725, "stsb": 1_500, "qqp": 40_430, "mnli": 9_815,
             "mnli_mm": 9_832, "qnli": 5_463, "rte": 277, "snli": 9_824, "scitail": 2_126, "race": 4_934,
             "story_cloze": 1_871}
METHODS = ("full", "no_pretrain", "no_aux_lm", "lstm")
SKILL = {"full": 0.0, "no_pretrain": -0.15, "no_aux_lm": -0.01, "lstm": -0.06}  # accuracy against full's
SEEDS = (1, 2, 3)
ENCODED = {"qqp": 363_846, "mnli": 392_702}  # training rows; dev and test as TEST_ROWS (mnli's dev: its matched)
PRECISION_SEEDS = 10
PARTS = ("encode", "analysis", "bootstrap_precision")


def sentences(count: int, seed: int = 0) -> list[str]:
    """`count` sentences of tools/synthetic_corpus.py's prose (about 17 words each)."""
    from synthetic_corpus import generate

    with tempfile.TemporaryDirectory() as scratch:
        text = Path(scratch) / "prose.txt"
        generate(text, count * 130, seed, progress=False)
        found = [s.strip() + "." for s in text.read_text(encoding="utf-8").replace("\n", " ").split(". ") if s.strip()]
    if len(found) < count:
        raise SystemExit(f"the synthetic prose gave {len(found)} sentences, {count} asked for")
    return found[:count]


def write_task_files(task: str, tasks: Path) -> dict:
    """A prepared task of ENCODED's training size (its dev and test TEST_ROWS) under `tasks`: its rows per split."""
    from gpt1.data.paper_tasks import PAPER_TASKS
    from gpt1.data.records import EntailmentExample, SimilarityExample, write_examples
    from gpt1.layout import split_file, task_spec

    spec = PAPER_TASKS[task].spec
    sizes = {"train": ENCODED[task], "dev": TEST_ROWS[task], "test": TEST_ROWS[task]}
    texts = sentences(2 * sum(sizes.values()), seed=list(ENCODED).index(task))
    labels = np.random.default_rng(0).integers(0, len(spec.labels), sum(sizes.values()))
    start = 0
    for split, rows in sizes.items():
        pairs = zip(texts[2 * start:2 * (start + rows):2], texts[2 * start + 1:2 * (start + rows):2],
                    labels[start:start + rows].tolist())
        record = EntailmentExample if spec.family == "entailment" else SimilarityExample
        split_file(task, split, tasks).parent.mkdir(parents=True, exist_ok=True)
        write_examples(split_file(task, split, tasks), [record(a, b, label) for a, b, label in pairs])
        start += rows
    task_spec(task, tasks).write_text(spec.to_json())
    return sizes


def encode_part(bpe_dir: Path, task: str, tasks: Path) -> dict:
    """The encode-task stage's work on a prepared `task` under `tasks` (in a child of its own, so that its peak
    memory is the stage's: the files were written by another process)."""
    from gpt1.data.task_data import Samples, load_task_data
    from gpt1.model.task_encoding import write_task
    from gpt1.tokenizer.bpe import Gpt1Bpe

    began = time.perf_counter()
    bpe = Gpt1Bpe.load(bpe_dir)
    encoded = tasks.parent / "encoded" / task
    written = write_task(task, load_task_data(Samples(0, None, None), task, tasks), bpe, encoded)
    seconds = time.perf_counter() - began
    size = sum(f.stat().st_size for f in encoded.iterdir())
    result = {"rows": written, "seconds": round(seconds, 1), "rows_per_second": round(sum(written.values()) / seconds),
              "output_mb": round(size / 1e6, 1), "bpe_merges": len(bpe.merges)}
    print(f"encode {task}: {result}", file=sys.stderr)
    return result


def encode_tasks(bpe_dir: Path) -> dict:
    """Each task of ENCODED prepared here, then encoded in a child: its time, peak memory and bytes per training
    row (the child's peak over the training rows)."""
    result = {}
    for task in ENCODED:
        with tempfile.TemporaryDirectory() as scratch:
            tasks = Path(scratch) / "tasks"
            sizes = write_task_files(task, tasks)
            found, seconds, peak_gb = child("encode", ["--bpe", str(bpe_dir), "--task", task, "--tasks", str(tasks)])
        if found["rows"] != sizes:
            raise SystemExit(f"encode {task}: {found['rows']} rows written, {sizes} prepared")
        result[task] = {**found, "peak_rss_gb": round(peak_gb, 3),
                        "bytes_per_training_row": round(peak_gb * 1e9 / sizes["train"])}
    return result


def _predictions(task: str, method: str, seed: int, gold: np.ndarray, classes: int) -> np.ndarray:
    """A method's predictions of one seed: right with the paper-like accuracy for the method (a correlation for a
    score), each seed its own draw."""
    rng = np.random.default_rng([list(TEST_ROWS).index(task), METHODS.index(method), seed])
    if classes == 0:  # a score (STS-B): correlated with gold
        return gold * (0.8 + SKILL[method]) + rng.normal(scale=0.8, size=len(gold))
    right = rng.random(len(gold)) < 0.75 + SKILL[method] + 0.01 * (seed - 2)
    return np.where(right, gold, (gold + rng.integers(1, max(classes, 2), len(gold))) % max(classes, 2))


def write_runs(results: Path) -> tuple[dict, dict]:
    """Every (method, task, seed) run's predictions_test.jsonl and metrics.json as the finetune stage writes them;
    the specs and the baselines' majority labels."""
    from gpt1.data.paper_tasks import PAPER_TASKS
    from gpt1.eval.metrics import score
    from gpt1.layout import RUN_METRICS, finetune_run, run_predictions

    specs, baselines = {}, {}
    for task, rows in TEST_ROWS.items():
        spec = PAPER_TASKS[task].spec
        specs[task] = spec
        classes = len(spec.labels)
        rng = np.random.default_rng(len(specs))
        gold = rng.uniform(0, 5, rows) if classes == 0 else rng.integers(0, classes, rows).astype(float)
        baselines[task] = {"majority": {"label": 0.0}}
        for method in METHODS:
            for seed in SEEDS:
                predicted = _predictions(task, method, seed, gold, classes)
                run = finetune_run(task, method, seed, results, spec.model_of)
                run.mkdir(parents=True)
                (run / run_predictions("test")).write_text("".join(
                    json.dumps({"index": i, "label": float(y), "prediction": float(p)}) + "\n"
                    for i, (y, p) in enumerate(zip(gold, predicted))))
                values = score(spec, gold.tolist(), predicted.tolist()).values
                (run / RUN_METRICS).write_text(json.dumps({"test": values}))
    return specs, baselines


def analysis_part() -> dict:
    from gpt1.eval import paper_tables
    from gpt1.eval.analysis import majority_checks, method_intervals
    from gpt1.eval.intervals import paired_differences, read_predictions
    from gpt1.layout import finetune_run

    timings = {}
    with tempfile.TemporaryDirectory() as scratch:
        results = Path(scratch) / "results"
        began = time.perf_counter()
        specs, baselines = write_runs(results)
        timings["write_predictions_s"] = round(time.perf_counter() - began, 1)
        began = time.perf_counter()
        intervals = method_intervals(results, specs, list(METHODS), list(SEEDS))
        timings["table_5_intervals_s"] = round(time.perf_counter() - began, 1)
        began = time.perf_counter()
        majority_checks(results, specs, list(METHODS), list(SEEDS), baselines)
        timings["majority_checks_s"] = round(time.perf_counter() - began, 1)
        began = time.perf_counter()
        paper_tables.comparison(results, specs, list(SEEDS))
        timings["tables_2_4_s"] = round(time.perf_counter() - began, 1)
        began = time.perf_counter()
        for method in METHODS:  # gpt1 compare: B − A per method over the tasks, seeds paired (the same seeds ran)
            pairs = {}
            for task, spec in specs.items():
                runs = [finetune_run(task, method, seed, results, spec.model_of) for seed in SEEDS]
                pairs[task] = (spec.primary_metric, read_predictions(runs), read_predictions(runs[::-1]))
            paired_differences(pairs, classes={t: len(s.labels) for t, s in specs.items()}, seeds_paired=list(specs))
        timings["compare_s"] = round(time.perf_counter() - began, 1)
    resamples = {f"full - {method}": {column: interval.resamples for column, interval in by_column.items()}
                 for method, by_column in intervals.items()}
    worst = max(max(i.low_sd, i.high_sd) for by_column in intervals.values() for i in by_column.values())
    return {**timings, "resamples": resamples, "largest_bound_sd": round(worst, 4),
            "test_rows": sum(TEST_ROWS.values()), "runs": len(TEST_ROWS) * len(METHODS) * len(SEEDS)}


def precision_part() -> dict:
    """Table 5's full − lstm on the largest test set (qqp) and on the noisiest (stsb), with PRECISION_SEEDS seeds."""
    from gpt1.data.paper_tasks import PAPER_TASKS
    from gpt1.eval.intervals import Predictions, paired_differences

    result = {}
    for task in ("qqp", "stsb"):
        spec = PAPER_TASKS[task].spec
        classes = len(spec.labels)
        rng = np.random.default_rng(1)
        rows = TEST_ROWS[task]
        gold = rng.uniform(0, 5, rows) if classes == 0 else rng.integers(0, classes, rows).astype(float)
        sides = [Predictions(gold, np.stack([_predictions(task, method, seed, gold, classes) for seed in SEEDS]))
                 for method in ("full", "lstm")]
        draws = [paired_differences({task: (spec.primary_metric, *sides)}, classes={task: classes},
                                    rng_seed=seed)[task] for seed in range(PRECISION_SEEDS)]
        result[task] = {"test_rows": rows, "metric": spec.primary_metric,
                        "resamples": sorted({draw.resamples for draw in draws})}
        for bound in ("low", "high"):
            values = [getattr(draw, bound) for draw in draws]
            result[task][bound] = {"mean": round(float(np.mean(values)), 3),
                                   "sd_over_seeds": round(float(np.std(values, ddof=1)), 4),
                                   "sd_estimated": round(float(np.mean([getattr(d, f"{bound}_sd") for d in draws])), 4)}
        print(f"precision {task}: {result[task]}", file=sys.stderr)
    return result


def own_peak_gb() -> float:
    """This process's own peak resident memory: its image's high-water mark (VmHWM). Not ru_maxrss, which a child
    started by fork and exec inherits from its parent's image as it was at the exec (the parent here holds the
    generated rows)."""
    status = Path("/proc/self/status").read_text()
    return int(status.split("VmHWM:", 1)[1].split()[0]) * 1024 / 1e9


def child(part: str, arguments: list[str]) -> tuple[dict, float, float]:
    """Run one part in a child process: (what it returned, its wall seconds, its own peak resident memory in GB)."""
    began = time.perf_counter()
    done = subprocess.run([sys.executable, __file__, "--part", part, *arguments], stdout=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise SystemExit(f"part {part} failed (status {done.returncode})")
    found = json.loads(done.stdout)
    return found["result"], time.perf_counter() - began, found["peak_gb"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("name", nargs="?", help="the file's name in docs/measurements/, without .json")
    parser.add_argument("--bpe", type=Path, default=ROOT / "data" / "bpe", help="a `gpt1 bpe` output folder")
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS),
                        help="measure these parts again, keeping the file's others")
    parser.add_argument("--part", choices=PARTS, help=argparse.SUPPRESS)
    parser.add_argument("--task", choices=ENCODED, help=argparse.SUPPRESS)
    parser.add_argument("--tasks", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.part:
        done = {"encode": lambda: encode_part(args.bpe, args.task, args.tasks), "analysis": analysis_part,
                "bootstrap_precision": precision_part}
        result = done[args.part]()
        print(json.dumps({"result": result, "peak_gb": own_peak_gb()}))
        return 0
    if not args.name:
        parser.error("name the measurement file")
    target = measure.FOLDER / f"{args.name}.json"
    kept = json.loads(target.read_text()) if target.is_file() and set(args.parts) != set(PARTS) else {}
    record = {part: kept[part] for part in PARTS if part in kept and part not in args.parts}
    for part in args.parts:
        if part == "encode":  # a child per task, after the parent prepared its files
            began = time.perf_counter()
            found = encode_tasks(args.bpe)
            seconds, peak = time.perf_counter() - began, max(task["peak_rss_gb"] for task in found.values())
        else:
            found, seconds, peak = child(part, ["--bpe", str(args.bpe)])
        record[part] = {**found, "wall_s": round(seconds, 1), "peak_rss_gb": round(peak, 2)}
    record.update({"wall_s": round(sum(record[part]["wall_s"] for part in PARTS if part in record), 1),
                   "exit_status": 0, "cores": len(os.sched_getaffinity(0)),
                   "precision": "fp64 (numpy; no training)", "commit": measure.commit(),
                   "date": datetime.date.today().isoformat(), "machine": measure.machine()})
    measure.write_record(target, record)
    print(json.dumps({part: {key: record[part][key] for key in ("wall_s", "peak_rss_gb")}
                      for part in PARTS if part in record}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
