"""Where the bpe stage's time goes, on 1 core and on more: the word counting (spaCy over each distinct piece, on every
core: gpt1/tokenizer/bpe.py's count_words) and the training (the tokenizers library's BPE trainer, fed every word as
often as it occurs: train_merges). Writes docs/measurements/NAME.json.

    python tools/measure_bpe_phases.py bpe-phases --corpus WORK/data/corpus/train.jsonl --cores 1 2 --merges 40000

The corpus is prepare's output (one {"text": ...} document a line), for example the train split a scale run of
tools/measure_data_scale.py leaves in its --work folder. Each core count runs in a process of its own under `taskset`
on the first N cores, so its worker pool and the trainer's threads have N cores, the phases one after the other.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import measure  # noqa: E402  (the machine description every measurement file carries)

PHASES = ("count_words", "train_merges")


def time_phases(corpus: Path, merges: int) -> dict:
    """Both phases in this process, each timed on its own clock: seconds, and CPU seconds of this process and of
    the worker processes (the counting's). The workers' CPU is read once they are reaped, as children of this
    process: so where they start by fork; under another start method (forkserver: Linux from Python 3.14) their
    parent is the server, and no CPU seconds are given."""
    import multiprocessing

    from gpt1.tokenizer.bpe import count_words, read_corpus, train_merges

    def cpu() -> tuple[float, float]:
        own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime

    found = {}
    start, (own, children) = time.perf_counter(), cpu()
    counts = count_words(read_corpus(corpus))
    found["count_words"] = {"wall_s": time.perf_counter() - start, "cpu_s": sum(cpu()) - own - children}
    start, (own, children) = time.perf_counter(), cpu()
    train_merges(counts, merges)
    found["train_merges"] = {"wall_s": time.perf_counter() - start, "cpu_s": sum(cpu()) - own - children}
    counted = multiprocessing.get_start_method() == "fork"
    for phase in found.values():
        phase.update(wall_s=round(phase["wall_s"], 2), cpu_s=round(phase["cpu_s"], 2) if counted else None)
    return {"phases": found, "words": sum(counts.values()), "distinct_words": len(counts)}


def run_on_cores(cores: int, corpus: Path, merges: int) -> dict:
    allowed = sorted(os.sched_getaffinity(0))[:cores]
    command = ["taskset", "-c", ",".join(map(str, allowed)), sys.executable, __file__, "--child", str(corpus),
               str(merges)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def speedups(runs: list[dict]) -> dict:
    """Each phase's time, and both phases' together, on 1 core over its time on each larger core count (None for a
    time too short to divide by)."""
    one = next((run for run in runs if run["cores"] == 1), None)
    if one is None:
        return {}
    ratio = lambda single, several: round(single / several, 2) if several > 0 else None  # noqa: E731
    found = {}
    for run in runs:
        if run["cores"] > 1:
            found[str(run["cores"])] = {phase: ratio(one["phases"][phase]["wall_s"], run["phases"][phase]["wall_s"])
                                        for phase in PHASES}
            found[str(run["cores"])]["both_phases"] = ratio(one["wall_s"], run["wall_s"])
    return found


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        print(json.dumps(time_phases(Path(argv[1]), int(argv[2]))))
        return 0
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("name", help="the record's name: docs/measurements/NAME.json")
    parser.add_argument("--corpus", type=Path, required=True, help="prepare's output, one JSON document a line")
    parser.add_argument("--cores", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--merges", type=int, default=40_000)
    arguments = parser.parse_args(argv)
    if not arguments.corpus.is_file():
        parser.error(f"{arguments.corpus} is not a file: give prepare's data/corpus/train.jsonl")
    usable = len(os.sched_getaffinity(0))
    if max(arguments.cores) > usable:
        parser.error(f"--cores {max(arguments.cores)} is more than the {usable} cores this process may use")
    runs, started = [], time.perf_counter()
    for cores in arguments.cores:
        found = run_on_cores(cores, arguments.corpus, arguments.merges)
        found.update(cores=cores, wall_s=round(sum(p["wall_s"] for p in found["phases"].values()), 2))
        runs.append(found)
        timed = ", ".join(f"{name} {phase['wall_s']} s" for name, phase in found["phases"].items())
        print(f"{cores} core(s): {timed}", flush=True)
    record = {"runs": runs, "speedup_over_one_core": speedups(runs), "merges": arguments.merges,
              "wall_s": round(time.perf_counter() - started, 1), "exit_status": 0,
              "corpus_mb": round(arguments.corpus.stat().st_size / 1e6, 1), "precision": "none (no model)",
              "commit": measure.commit(), "date": datetime.date.today().isoformat(), "machine": measure.machine(),
              "note": "the bpe stage's two phases one after the other, one process per core count (the stage's "
                      "start and its writing of the vocabulary are not in them); count_words includes reading the "
                      "corpus"}
    measure.write_record(measure.FOLDER / f"{arguments.name}.json", record)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
