"""How the data stages' cost grows with the corpus: user-files, download, prepare, bpe and tokenize on synthetic prose
(tools/synthetic_corpus.py, fed through `data.user_corpus`) at several sizes and core counts, each stage timed alone,
with the growth fitted. Writes docs/measurements/NAME.json, which docs/paper-run.md and `gpt1 plan` read.

    python tools/measure_data_scale.py data-scale --sizes 10MB 30MB 100MB 300MB --cores 2 1 --merges 40000

Each size runs in a scratch copy of the project under --work (never in this checkout's data/), with the corpus as the
only corpus part (the default's tasks stay: prepare decontaminates against their dev and test sentences, as a real
run does) and the downloads read from this checkout's cache. A stage runs under `taskset` on the first N cores, so
its worker pool (every core the process may use) has N workers, and under /usr/bin/time for its wall time and peak
memory (the largest resident set of any one of its processes). The fit per stage and core count: time ∝ size^k by
least squares on log-log over the sizes, and time = fixed + rate × size (the line used to extrapolate), the same
for peak memory.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import measure  # noqa: E402  (the machine description every measurement file carries)
import synthetic_corpus  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
STAGES = ["user-files", "download", "prepare", "bpe", "tokenize"]
# What each stage writes, for its disk figure.
OUTPUTS = {"user-files": "data/user_files", "download": "data/raw", "prepare": "data/corpus", "bpe": "data/bpe",
           "tokenize": "data/tokens"}
DATA_HALF = ("prepare", "bpe", "tokenize")
FITTED = ("wall_s", "peak_rss_gb", "peak_total_rss_gb")
BOOKS1_BYTES = 6.7e9  # the paper profile's corpus, to which the fits are extrapolated


def data_half_minutes(fitted: dict) -> dict[str, float]:
    """prepare, bpe and tokenize together at books1's size, in minutes along each stage's line, per core count."""
    return {cores: round(sum(by_stage[stage]["wall_s"]["line_at_books1"] for stage in DATA_HALF) / 60, 1)
            for cores, by_stage in fitted.items()}


def scratch_project(work: Path) -> Path:
    """A copy of the project's tracked files (no data/, no results/) to run the stages in."""
    return measure.scratch_copy(work / "project")


def profile(project: Path, corpus: Path, merges: int) -> Path:
    """The overlay: the synthetic corpus as the only corpus part, and the merges asked for."""
    path = project / "scale.yaml"
    path.write_text(json.dumps({"data": {"corpus": ["synthetic"], "user_corpus": {"synthetic": str(corpus)}},
                                "bpe": {"merges": merges}}) + "\n")  # JSON is YAML
    return path


def timed_stage(project: Path, overlay: Path, stage: str, cores: int, log: Path) -> dict:
    """One stage alone on the first `cores` cores: wall seconds, peak memory (GB: the largest process, and the sum
    over the stage's processes, its workers included) and the disk its outputs take."""
    command = ["/usr/bin/time", "-v", "taskset", "-c", ",".join(map(str, range(cores))),
               sys.executable, "-m", "gpt1.cli", "--profile", str(overlay), stage]
    environment = dict(os.environ, PYTHONPATH=str(project), GPT1_CACHE=str(ROOT / "data" / "cache"))
    with log.open("w") as output:
        process = subprocess.Popen(command, cwd=project, env=environment, stdout=output, stderr=subprocess.STDOUT)
        total_peak = peak_tree_memory(process)
    if process.returncode != 0:
        raise SystemExit(f"measure-data-scale: {stage} failed; its output: {log}")
    figures = measure.from_time_log(log)
    output = project / OUTPUTS[stage]
    return {"wall_s": figures["wall_s"], "peak_rss_gb": figures["peak_rss_gb"],
            "peak_total_rss_gb": round(total_peak / 1e9, 2),
            "disk_gb": measure.disk_gb(output) if output.exists() else 0.0}


def stand_in_for_prepare(project: Path, corpus: Path) -> None:
    """The synthetic corpus, linked (not copied: it may be gigabytes) as prepare's train split."""
    target = project / "data" / "corpus" / "train.jsonl"
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(corpus, target)
    except OSError:  # another file system
        target.symlink_to(corpus.resolve())


def peak_tree_memory(process: subprocess.Popen, interval: float = 0.2) -> int:
    """The largest sum of resident memory over `process` and its descendants (worker pools), sampled until it ends."""
    import psutil

    peak, root = 0, psutil.Process(process.pid)
    while process.poll() is None:
        try:
            tree = [root, *root.children(recursive=True)]
            total = 0
            for member in tree:
                try:
                    total += member.memory_info().rss
                except psutil.Error:  # ended between the listing and the reading
                    pass
            peak = max(peak, total)
        except psutil.Error:
            pass
        time.sleep(interval)
    return peak


def fit(sizes_mb: list[float], values: list[float]) -> dict:
    """How a cost grows over the sizes (ascending), and its value extrapolated to books1 two ways.

    k: the exponent of value ∝ size^k by least squares on log-log over every size; k_largest: the same between the
    two largest sizes, where fixed costs (a process's start, the tasks' preparation) count least. The line, value =
    fixed + per_mb × size by least squares, extrapolates time (a start-up cost, then a rate per byte). The power law
    through the largest size with k_largest (power_scale × MB^k_largest) extrapolates memory, which grows with the
    vocabulary, a power of the size below 1 (Heaps' law), that the line would overstate."""
    sizes, values_ = np.asarray(sizes_mb, float), np.asarray(values, float)
    logs, log_values = np.log(sizes), np.log(np.maximum(values_, 1e-9))
    k = float(np.polyfit(logs, log_values, 1)[0])
    k_largest = float((log_values[-1] - log_values[-2]) / (logs[-1] - logs[-2]))
    per_mb, fixed = (float(x) for x in np.polyfit(sizes, values_, 1))
    power_scale = float(values_[-1] / sizes[-1] ** k_largest)
    books1_mb = BOOKS1_BYTES / 1e6
    return {"k": round(k, 3), "k_largest": round(k_largest, 3), "fixed": round(fixed, 3), "per_mb": per_mb,
            "power_scale": power_scale, "line_at_books1": round(fixed + per_mb * books1_mb, 2),
            "power_at_books1": round(power_scale * books1_mb ** k_largest, 2)}


def fits(runs: list[dict]) -> dict:
    """Per core count and stage: the time's and the peak memory's fit over the sizes."""
    result: dict = {}
    for cores in sorted({run["cores"] for run in runs}):
        chosen = sorted((run for run in runs if run["cores"] == cores), key=lambda run: run["size_mb"])
        if len(chosen) < 2:
            continue
        sizes = [run["size_mb"] for run in chosen]
        result[str(cores)] = {stage: {figure: fit(sizes, [run["stages"][stage][figure] for run in chosen])
                                      for figure in FITTED if all(figure in run["stages"][stage] for run in chosen)}
                              for stage in STAGES}
    return result


def corpus_of(work: Path, size: str, seed: int) -> tuple[Path, dict]:
    """The synthetic corpus of `size` (made once, kept under --work for the next run) and its summary."""
    out = work / "corpus" / f"synthetic-{size}.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    record = synthetic_corpus.record_path(out)
    if not (out.is_file() and record.is_file()):
        synthetic_corpus.main(["--size", size, "--seed", str(seed), "--out", str(out)])
    summary = json.loads(record.read_text())
    return out, summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("name", help="the file's name in docs/measurements/, without .json")
    parser.add_argument("--sizes", nargs="+", default=[], help="corpus sizes, e.g. 10MB 100MB 1GB")
    parser.add_argument("--cores", nargs="+", type=int, default=[2, 1], help="core counts to run each size on")
    parser.add_argument("--merges", type=int, default=40000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", type=Path, default=Path("/tmp/gpt1-data-scale"))
    parser.add_argument("--note", default="")
    parser.add_argument("--refit", action="store_true",
                        help="measure nothing: fit the runs the file holds again (after a change to the fits)")
    parser.add_argument("--stages", nargs="+", choices=STAGES, default=STAGES, help="the stages to run, in order")
    parser.add_argument("--prepared", action="store_true",
                        help="run no stage before bpe: the synthetic corpus stands in as prepare's train split (on "
                             "synthetic prose prepare's clean-up, dedupe and decontamination change a few sentences), "
                             "for a full-size run of the stage that holds the most; kept under full_size, not fitted")
    parser.add_argument("--append", action="store_true",
                        help="keep the runs the file already holds (other sizes or core counts) and fit them all")
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    target = measure.FOLDER / f"{args.name}.json"
    kept = json.loads(target.read_text()) if (args.append or args.refit) and target.is_file() else {}
    runs, full_size = kept.get("runs", []), kept.get("full_size", [])
    if args.refit:
        if not runs:
            raise SystemExit(f"measure-data-scale: {target} holds no runs to fit")
        args.sizes = []
    for size in args.sizes:
        corpus, summary = corpus_of(args.work, size, args.seed)
        size_mb = corpus.stat().st_size / 1e6
        for cores in args.cores:
            project = scratch_project(args.work)
            overlay = profile(project, corpus, args.merges)
            stages = {}
            if args.prepared:
                stand_in_for_prepare(project, corpus)
            for stage in args.stages:
                stages[stage] = timed_stage(project, overlay, stage, cores, args.work / f"{size}-{cores}-{stage}.log")
                print(f"measure-data-scale: {size} on {cores} core(s): {stage} {stages[stage]}", flush=True)
            run = {"size": size, "size_mb": round(size_mb, 1), "cores": cores, "stages": stages,
                   "distinct_words": summary.get("distinct_words"), "words": summary.get("words"),
                   "commit": measure.commit(), "date": datetime.date.today().isoformat()}
            if args.prepared:
                full_size.append({**run, "stand_in": "the synthetic corpus as prepare's train split"})
            else:
                tokens = json.loads((project / "data/tokens/meta.json").read_text())
                runs.append({**run, "tokens": {split: tokens[split]["tokens"] for split in ("train", "val")}})
            shutil.rmtree(project)
    for run in runs:  # the measured data half, beside the fitted one
        run["data_half_s"] = round(sum(run["stages"][stage]["wall_s"] for stage in DATA_HALF if stage in run["stages"]), 1)
    wall = sum(stage["wall_s"] for run in runs + full_size for stage in run["stages"].values())
    fitted = fits(runs)
    record = {"runs": runs, "fits": fitted, "data_half_at_books1_min": data_half_minutes(fitted), "full_size": full_size,
              "extrapolated_to_gb": BOOKS1_BYTES / 1e9,
              "wall_s": round(wall, 1),
              "exit_status": 0, "merges": args.merges, "seed": args.seed,
              "corpus": "tools/synthetic_corpus.py, .jsonl", "precision": "none (no training)", "note": args.note,
              "commit": measure.commit(), "date": datetime.date.today().isoformat(),
              "machine": measure.machine()}
    if args.refit:  # the runs' own commit, date and machine stay
        record = {**kept, **{key: record[key] for key in ("fits", "data_half_at_books1_min",
                                                       "extrapolated_to_gb", "wall_s", "exit_status")}}
    elif args.append:  # a run appended keeps the file's description of the earlier runs
        record = {**record, **{key: kept[key] for key in ("commit", "date", "machine", "note") if key in kept}}
    measure.write_record(target, record)
    print(json.dumps(record["fits"], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
