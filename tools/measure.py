"""Time a whole command and write what the docs may quote of it to docs/measurements/NAME.json.

    python tools/measure.py make-test -- make test
    python tools/measure.py repro --from-time-log repro.log --commit 68c0f56 --date 2026-11-26
    python tools/measure.py footprint --sizes .venv data data/cache .dvc/cache results -- make repro

The file names the machine (CPU model, cores, memory, the CPU flags that pick PyTorch's kernels), the kernels
PyTorch chose, the precision, the commit and the date, beside the wall time, the peak memory and the exit status;
for pytest, the counts it printed. The pages quote these files and tests/test_doc_figures.py checks that every
figure they quote is held by one. `--from-time-log` reads the report of an earlier `/usr/bin/time -v` run instead
of running anything (the machine is then this one: run it where the command ran). `--sizes` also records the disk
each folder takes once the command has run (GB, the bytes of its files; a folder inside another counts in both).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDER = ROOT / "docs" / "measurements"
# The flags that decide which kernels PyTorch and MKL can use on a CPU.
KERNEL_FLAGS = ("avx2", "fma", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile")
CAPS = ("ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS", "ONEDNN_MAX_CPU_ISA")


def clock(seconds: float) -> str:
    """Seconds as /usr/bin/time prints them: m:ss, or h:mm:ss from an hour on."""
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def machine() -> dict:
    cpuinfo = Path("/proc/cpuinfo").read_text()
    model = re.search(r"^model name\s*:\s*(.+)$", cpuinfo, re.M)
    flags = set(re.search(r"^flags\s*:\s*(.+)$", cpuinfo, re.M).group(1).split())
    memory_kb = int(re.search(r"MemTotal:\s*(\d+)", Path("/proc/meminfo").read_text()).group(1))
    return {"cpu": model.group(1).strip() if model else "unknown", "cores": os.cpu_count(),
            "memory_gib": round(memory_kb / 2**20), "cpu_flags": [f for f in KERNEL_FLAGS if f in flags],
            "kernel_caps": {name: os.environ[name] for name in CAPS if name in os.environ},
            "torch_capability": torch_capability()}


def torch_capability() -> str | None:
    """The kernels PyTorch picks here, as the project's environment reports it (under the same caps)."""
    python = ROOT / ".venv" / "bin" / "python"
    found = subprocess.run([str(python if python.exists() else sys.executable), "-c",
                            "import torch; print(torch.backends.cpu.get_cpu_capability())"],
                           capture_output=True, text=True)
    return found.stdout.strip() or None


def commit() -> str:
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                          text=True).stdout.strip()


def pytest_counts(output: str) -> dict:
    """pytest's summary line, e.g. '790 passed, 3 skipped in 1208.31s (0:20:08)'."""
    line = re.findall(r"=*\s*((?:\d+ \w+(?:, )?)+) in ([\d.]+)s", output)
    if not line:
        return {}
    counts, seconds = line[-1]
    found = {word: int(n) for n, word in re.findall(r"(\d+) (\w+)", counts)}
    return {"pytest": {**found, "seconds": float(seconds), "clock": clock(float(seconds))}}


def run(command: list[str], log: Path) -> dict:
    print(f"output: {log}", file=sys.stderr)
    start = time.monotonic()
    with log.open("w") as out:
        exit_status = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT).returncode
    wall = time.monotonic() - start
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {"command": " ".join(command), "wall_s": round(wall, 1), "wall": clock(wall),
            "peak_rss_gb": round(peak_kb / 1e6, 2), "exit_status": exit_status,
            **pytest_counts(log.read_text(errors="replace"))}


def from_time_log(log: Path) -> dict:
    """The figures of a `/usr/bin/time -v` report (its last one, where a log holds several)."""
    text = log.read_text(errors="replace")
    field = lambda name: re.findall(rf"{re.escape(name)}: (.+)", text)[-1].strip()  # noqa: E731
    parts = [float(p) for p in field("Elapsed (wall clock) time (h:mm:ss or m:ss)").split(":")]
    wall = sum(p * 60**i for i, p in enumerate(reversed(parts)))
    return {"command": field("Command being timed").strip('"'), "wall_s": round(wall, 1), "wall": clock(wall),
            "peak_rss_gb": round(int(field("Maximum resident set size (kbytes)")) / 1e6, 2),
            "exit_status": int(field("Exit status")), **pytest_counts(text)}


SCRATCH_MARK = ".measure-scratch"  # in every scratch copy this module made, so that only those are ever removed


def scratch_copy(target: Path) -> Path:
    """The project's tracked files copied into `target` (no data/, no results/), for a measurement to run in. A
    `target` left by an earlier measurement is replaced; any other existing path is refused, never removed."""
    if target.exists():
        if not (target / SCRATCH_MARK).is_file():
            raise SystemExit(f"{target} exists and is no scratch copy a measurement made: choose another --work")
        shutil.rmtree(target)
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    for name in filter(None, files.split("\0")):
        if (ROOT / name).is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, target / name)
    (target / SCRATCH_MARK).write_text("made by tools/measure.py\n")
    return target


def disk_gb(folder: Path) -> float:
    """The bytes of the files under `folder` (links not followed), in GB."""
    total = sum(path.lstat().st_size for path in folder.rglob("*") if path.is_file() and not path.is_symlink())
    return round(total / 1e9, 3)


def write_record(target: Path, record: dict) -> None:
    """`record` as `target`'s JSON, written beside it and renamed when whole."""
    partial = target.with_suffix(".json.tmp")
    partial.write_text(json.dumps(record, indent=2) + "\n")
    partial.replace(target)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                     usage="%(prog)s NAME [options] -- COMMAND ... | NAME --from-time-log LOG [options]")
    parser.add_argument("name", help="the file's name in docs/measurements/, without .json")
    parser.add_argument("--from-time-log", type=Path, help="read an earlier /usr/bin/time -v report instead")
    parser.add_argument("--commit", help="the commit measured (default: this checkout's HEAD)")
    parser.add_argument("--date", help="the day measured (default: today)")
    parser.add_argument("--precision", default="fp32", help="the training precision of the command (fp32 or bf16)")
    parser.add_argument("--note", default="", help="one sentence on how it ran (fresh clone, cached archives...)")
    parser.add_argument("--sizes", nargs="+", type=Path, default=[], metavar="FOLDER",
                        help="folders whose disk use to record after the command (disk_gb)")
    argv = sys.argv[1:] if argv is None else argv
    # The command to time follows "--", whatever options it has.
    split = argv.index("--") if "--" in argv else len(argv)
    args, command = parser.parse_args(argv[:split]), argv[split + 1:]
    if bool(command) == bool(args.from_time_log):
        parser.error("give a command after -- or --from-time-log, one of the two")
    FOLDER.mkdir(parents=True, exist_ok=True)
    figures = (from_time_log(args.from_time_log) if args.from_time_log
               else run(command, Path(tempfile.mkstemp(prefix=f"measure-{args.name}-", suffix=".log")[1])))
    if args.sizes:
        figures["disk_gb"] = {str(folder): disk_gb(folder) for folder in args.sizes}
    record = {**figures, "precision": args.precision, "note": args.note, "commit": args.commit or commit(),
              "date": args.date or datetime.date.today().isoformat(), "machine": machine()}
    target = FOLDER / f"{args.name}.json"
    write_record(target, record)
    print(json.dumps(record, indent=2))
    return figures["exit_status"]


if __name__ == "__main__":
    sys.exit(main())
