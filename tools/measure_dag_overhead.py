"""What DVC and Snakemake cost on their own as the DAG grows: the default's DAG beside the paper profile's, each stage's
command replaced by a stand-in that only writes the stage's outputs, so what is timed is the engines' work.

    python tools/measure_dag_overhead.py dag-overhead --profiles default paper

For each profile, in a scratch git repository holding the project's tracked files with that profile's values in
params.yaml (dvc.yaml's foreach and matrix expand from them):
- `dvc stage list` counts the stages; `dvc status` is timed with nothing run yet;
- `dvc repro` runs every stand-in (a run's own overhead: DVC hashes, locks and writes dvc.lock after each stage);
- `dvc status` and `dvc repro` are timed again with nothing left to do;
- `snakemake -n` (the whole DAG planned from the same stage table, nothing run) is timed;
- in a second scratch repository, `snakemake --cores 1` runs every stand-in one after another, then again with
  nothing left to do (Snakemake keeps no lock file; each job is a process of its own, started through a shell).
The per-stage (per-job) overhead is a run's wall time over its stages (jobs). Results: docs/measurements/NAME.json;
`--engines snakemake` measures Snakemake alone and keeps the file's DVC figures.
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

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import measure  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent  # dvc and snakemake beside the interpreter (.venv/bin)
# A stand-in writes each output: a folder (no suffix) gets one file inside, a file gets a line. Its ${...} are DVC's.
STAND_IN = "python -c \"import pathlib, sys; [(p.mkdir(parents=True, exist_ok=True), (p / 'x').write_text('x')) " \
           "if not p.suffix else (p.parent.mkdir(parents=True, exist_ok=True), p.write_text('x')) for p in " \
           "map(pathlib.Path, sys.argv[1:])]\""


def scratch_repository(work: Path, profile: str | None) -> Path:
    """The tracked files, params.yaml with `profile`'s values, dvc.yaml's commands replaced by stand-ins, in git."""
    sys.path.insert(0, str(ROOT))
    from gpt1.params.files import compose_raw

    repository = measure.scratch_copy(work / (profile or "default"))
    if profile:
        raw, _ = compose_raw(ROOT / "params.yaml", [ROOT / "profiles" / f"{profile}.yaml"])
        (repository / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    pipeline = yaml.safe_load((repository / "dvc.yaml").read_text())
    for stage in pipeline["stages"].values():
        body = stage.get("do", stage)  # a foreach stage's body
        outputs = [next(iter(out)) if isinstance(out, dict) else out
                   for field in ("outs", "metrics", "plots") for out in body.get(field, [])]
        body["cmd"] = " ".join([STAND_IN, *outputs])
        body.pop("always_changed", None)
    (repository / "dvc.yaml").write_text(yaml.safe_dump(pipeline, sort_keys=False))
    for command in (["git", "init", "-q"], ["git", "add", "-A"],
                    ["git", "-c", "user.name=measure", "-c", "user.email=measure@localhost", "commit", "-qm", "x"]):
        subprocess.run(command, cwd=repository, check=True)
    return repository


def timed(command: list[str], cwd: Path) -> tuple[float, str]:
    environment = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    started = time.monotonic()
    done = subprocess.run(command, cwd=cwd, env=environment, capture_output=True, text=True)
    seconds = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"measure-dag-overhead: {' '.join(command)} failed in {cwd}:\n{done.stderr[-2000:]}")
    return round(seconds, 2), done.stdout


def snakemake_run(work: Path, profile: str | None) -> dict:
    """Every stand-in through Snakemake on one core, then the same target with nothing to do."""
    repository = scratch_repository(work / "snakemake", profile)
    configfile = ["--configfile", f"profiles/{profile}.yaml"] if profile else []
    command = [str(BIN / "snakemake"), "--cores", "1", *configfile]
    run, _ = timed(command, repository)
    log = "\n".join(path.read_text() for path in (repository / ".snakemake" / "log").glob("*.log"))
    jobs = max((int(line.split(" of ")[1].split()[0]) for line in log.splitlines() if " steps (" in line), default=0)
    nothing, _ = timed(command, repository)
    shutil.rmtree(repository)
    return {"snakemake_jobs": jobs, "snakemake_run_stand_ins_s": run,
            "snakemake_seconds_per_job": round(run / jobs, 3) if jobs else None, "snakemake_nothing_to_do_s": nothing}


def measure_profile(work: Path, profile: str | None) -> dict:
    repository = scratch_repository(work, profile)
    _, listing = timed([str(BIN / "dvc"), "stage", "list"], repository)
    stages = len([line for line in listing.splitlines() if line.strip()])
    status_fresh, _ = timed([str(BIN / "dvc"), "status"], repository)
    run, _ = timed([str(BIN / "dvc"), "repro"], repository)
    status_done, _ = timed([str(BIN / "dvc"), "status"], repository)
    repro_done, _ = timed([str(BIN / "dvc"), "repro"], repository)
    configfile = ["--configfile", f"profiles/{profile}.yaml"] if profile else []
    plan, _ = timed([str(BIN / "snakemake"), "-n", "--cores", "2", *configfile], repository)
    shutil.rmtree(repository)
    return {"profile": profile or "default", "stages": stages, "dvc_status_nothing_run_s": status_fresh,
            "dvc_repro_stand_ins_s": run, "dvc_seconds_per_stage": round(run / stages, 3),
            "dvc_status_all_done_s": status_done, "dvc_repro_nothing_to_do_s": repro_done,
            "snakemake_dry_run_s": plan}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("name", help="the file's name in docs/measurements/, without .json")
    parser.add_argument("--profiles", nargs="+", default=["default", "paper"],
                        help="default (params.yaml alone) and profiles/<name>.yaml")
    parser.add_argument("--engines", nargs="+", choices=("dvc", "snakemake"), default=["dvc", "snakemake"])
    parser.add_argument("--work", type=Path, default=Path("/tmp/gpt1-dag-overhead"))
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    target = measure.FOLDER / f"{args.name}.json"
    kept = {row["profile"]: row for row in json.loads(target.read_text())["profiles"]} \
        if "dvc" not in args.engines and target.is_file() else {}
    rows = []
    for name in args.profiles:
        profile = None if name == "default" else name
        row = measure_profile(args.work, profile) if "dvc" in args.engines else dict(kept.get(name, {"profile": name}))
        if "snakemake" in args.engines:
            row.update(snakemake_run(args.work, profile))
        rows.append(row)
    for row in rows:
        print(json.dumps(row), flush=True)
    wall = sum(value for row in rows for key, value in row.items() if key.endswith("_s"))
    record = {"profiles": rows, "wall_s": round(wall, 1), "exit_status": 0, "precision": "none (no training)",
              "commit": measure.commit(), "date": datetime.date.today().isoformat(),
              "machine": measure.machine()}
    measure.write_record(target, record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
