"""`make gpu-check`: on a GPU machine with no network, from the folder `make gpu-bundle` made, in one command: the
paper model's throughput beside transformers' (and the candidate settings for a faster step, with where the step's
time goes), the GPU profile end to end through Snakemake to Table 5 with intervals, its fine-tuning rate chosen on
dev first, the GPU tests, and Figure 2's panels. One report (report.md and the report.json it is written from)
names every figure, the device and the versions.

Each step runs under its own time limit and the report is rewritten after every step, so a step that fails or runs
out of time still leaves the others' figures. The steps run in the order of what they are worth: the benchmark
(the first minutes of a run buy its figures for sure), pretraining, the dev sweep, Table 5, the tests, the figures.

    python3 tools/gpu_check.py [--bundle gpu-bundle] [--report gpu-report] [--rehearsal] [--benchmarks-only]
                               [--science]

--science (`make gpu-science`) spends the run on the paper's findings instead: the GPU profile with the longer
pre-training of profiles/gpu-science.yaml, the dev sweep, Table 5, the transfer curve over every task (the gap
full − w/o pre-training against pre-training tokens, and the tokens a log-linear fit of it reaches the paper's
size of gap at), then one headline benchmark line; no GPU tests.

--rehearsal runs the same steps on a CPU, small (the tiny profile's shapes over the GPU profile, CPU devices, a
tiny benchmark): what the test suite and a developer run before a GPU run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gpu_report  # noqa: E402  (tools/ import each other)
from gpu_steps import Steps  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PROFILE = "profiles/gpu.yaml"
REHEARSAL_OVERLAY = "tools/gpu-check-rehearsal.yaml"
SCIENCE_OVERLAY = "profiles/gpu-science.yaml"
# The stages that run here; the data stages (encode-zeroshot's candidates too) ran where the bundle was made, and
# their outputs are in it.
GPU_RULES = ["pretrain", "starting_model", "finetune", "layer_transfer", "transfer_curve", "baselines", "evaluate",
             "ablation", "layer_figure", "transfer_figure", "zeroshot"]
STAMP = "data/.gpu-bundle.json"  # which bundle's data this checkout holds (written when it was unpacked here)


class Check(Steps):
    """The steps (tools/gpu_steps.py), their limits and the report they fill (tools/gpu_report.py)."""

    def __init__(self, bundle: Path, report: Path, rehearsal: bool, budget_seconds: float, science: bool = False):
        self.bundle, self.report, self.rehearsal, self.science = bundle, report, rehearsal, science
        self.site = Path("/tmp/gpt1-gpu-site") if not rehearsal else report / "site"
        self.started = time.monotonic()
        self.deadline = self.started + budget_seconds
        self.facts: dict = {"started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                            "rehearsal": rehearsal, "science": science, "steps": {}}
        (report / "logs").mkdir(parents=True, exist_ok=True)

    @property
    def root(self) -> Path:
        """The checkout the steps run in."""
        return ROOT

    # -- running ------------------------------------------------------------------------------------------------
    def environment(self) -> dict[str, str]:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), str(self.site), env.get("PYTHONPATH")]))
        env["PATH"] = os.pathsep.join([str(self.site / "bin"), env["PATH"]])
        env["PYTHONUNBUFFERED"] = "1"
        return env

    def run(self, name: str, command: list[str], limit: float) -> bool:
        """One step as a subprocess, its output in logs/<name>.log, stopped at `limit` seconds or the budget."""
        limit = min(limit, self.deadline - time.monotonic())
        step = self.facts["steps"].setdefault(name, {})
        step["command"] = " ".join(command)
        if limit < 10:
            step.update(status="skipped: no time left in the budget", seconds=0)
            self.write_report()
            return False
        log = self.report / "logs" / f"{name}.log"
        started = time.monotonic()
        with log.open("w") as output:
            process = subprocess.Popen(command, cwd=ROOT, env=self.environment(), stdout=output,
                                       stderr=subprocess.STDOUT, start_new_session=True)
            try:
                code = process.wait(timeout=limit)
                step["status"] = "passed" if code == 0 else f"failed (exit {code})"
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, 15)
                try:
                    process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, 9)
                    process.wait()
                step["status"] = f"stopped at its limit of {limit:.0f} s"
        step["seconds"] = round(time.monotonic() - started, 1)
        step["tail"] = log.read_text(errors="replace").splitlines()[-15:]
        print(f"gpu-check: {name}: {step['status']} in {step['seconds']} s", flush=True)
        self.write_report()
        return step["status"] == "passed"

    # -- the steps ----------------------------------------------------------------------------------------------
    def install(self) -> bool:
        """The bundle's wheels into a folder of their own (beside the image's packages, which stay as they are), a
        `gpt1` command, and the bundle's data, checked by sha256, where this checkout has none."""
        started = time.monotonic()
        manifest = json.loads((self.bundle / "manifest.json").read_text())
        self.facts["bundle"] = {key: manifest[key] for key in ("made", "commit", "profile", "python_version")}
        wheels = sorted((self.bundle / "wheels").glob("*.whl"))
        for wheel in wheels:
            if sha256(wheel) != manifest["wheels"].get(wheel.name):
                raise SystemExit(f"gpu-check: {wheel} does not match the bundle's manifest; make the bundle again")
        if not (self.site / ".installed").is_file():
            subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps",
                            "--no-compile", "--target", str(self.site), *map(str, wheels)], check=True)
            (self.site / ".installed").write_text("\n".join(wheel.name for wheel in wheels) + "\n")
        command = self.site / "bin" / "gpt1"
        command.parent.mkdir(exist_ok=True)
        command.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m gpt1.cli "$@"\n')
        command.chmod(0o755)
        self.unpack_data(manifest)
        self.facts["steps"]["install"] = {"status": "passed", "seconds": round(time.monotonic() - started, 1),
                                          "wheels": len(wheels)}
        return True

    def unpack_data(self, manifest: dict) -> None:
        archive = self.bundle / manifest["data"]["file"]
        digest = manifest["data"]["sha256"]
        stamp = ROOT / STAMP
        if stamp.is_file() and json.loads(stamp.read_text()).get("sha256") == digest:
            return  # unpacked here before
        present = [folder for folder in manifest["data"]["folders"] if (ROOT / folder).exists()]
        if present:
            raise SystemExit(f"gpu-check: {present[0]} exists and did not come from this bundle; run the check in a "
                             "fresh clone (it never replaces data it did not unpack)")
        if sha256(archive) != digest:
            raise SystemExit(f"gpu-check: {archive} does not match the bundle's manifest; make the bundle again")
        with tarfile.open(archive) as tar:
            tar.extractall(ROOT, filter="data")  # no absolute paths, links out of the folder or devices
        stamp.write_text(json.dumps({"sha256": digest}) + "\n")

    def profiles(self) -> list[str]:
        """The GPU profile, the science run's overlay, the rehearsal's on a CPU, and the rate the dev sweep chose
        once it has."""
        chosen = self.report / "chosen.yaml"
        return ([PROFILE] + ([SCIENCE_OVERLAY] if self.science else []) + ([REHEARSAL_OVERLAY] if self.rehearsal else [])
                + ([str(chosen)] if chosen.is_file() else []))

    def snakemake(self, name: str, targets: list[str], limit: float) -> bool:
        cores = os.cpu_count() or 2
        # Several small training jobs share one GPU (each leaves most of it idle): pretraining gets 4 CPU threads,
        # fine-tuning 2, so that up to cores / 2 fine-tuning jobs run at once.
        threads = [f"{rule}={min(4 if rule == 'pretrain' else 2, cores)}"
                   for rule in ("pretrain", "finetune", "layer_transfer", "transfer_curve")]
        command = ["snakemake", *targets, "--cores", str(cores), "--configfile", *self.profiles(), "--allowed-rules",
                   *GPU_RULES, "--set-threads", *threads, "--scheduler", "greedy", "--rerun-triggers", "mtime",
                   "--nolock"]
        return self.run(name, command, limit=limit)

    # -- the report ---------------------------------------------------------------------------------------------
    def describe_machine(self) -> None:
        import torch

        machine = {"python": platform.python_version(), "torch": torch.__version__, "cuda": torch.version.cuda,
                   "cpu_count": os.cpu_count(), "commit": git_commit()}
        if torch.cuda.is_available():
            machine["gpu"] = torch.cuda.get_device_name(0)
            machine["gpu_memory_gib"] = round(torch.cuda.get_device_properties(0).total_memory / 2**30, 1)
        else:
            machine["cpu_capability"] = torch.backends.cpu.get_cpu_capability()
        smi = shutil.which("nvidia-smi")
        if smi:
            machine["nvidia_smi"] = subprocess.run([smi, "-L"], capture_output=True, text=True).stdout.strip()
        self.facts["machine"] = machine

    def collect(self) -> None:
        gpu_report.collect(self.facts, self.report, self.root)

    def write_report(self) -> None:
        self.facts["seconds"] = round(time.monotonic() - self.started, 1)
        (self.report / "report.json").write_text(self.portable(json.dumps(self.facts, indent=2, default=str)) + "\n")
        (self.report / "report.md").write_text(self.portable(gpu_report.render(self.facts)))

    def portable(self, text: str) -> str:
        """The report without this machine's folders: the report's own as `<report>/`, the project's relative."""
        return text.replace(f"{self.report}/", "<report>/").replace(f"{self.root}/", "")

    def finish(self) -> None:
        self.collect()
        self.write_report()
        def no_weights(member: tarfile.TarInfo) -> tarfile.TarInfo | None:  # fine-tuned weights: tens of MB each
            return None if member.name.endswith(".safetensors") else member

        with tarfile.open(self.report / "results.tar.gz", "w:gz") as archive:
            for folder in ("results", "logs"):
                if (ROOT / folder).is_dir():
                    archive.add(ROOT / folder, arcname=folder, filter=no_weights)
            for path in sorted(self.report.iterdir()):
                if path.name != "results.tar.gz" and path.name != "site":
                    archive.add(path, arcname=f"gpu-report/{path.name}", filter=no_weights)


def sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def git_commit() -> str:
    """HEAD, with "+changes" where the tracked files differ from it (a checkout copied without its newest history)."""
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        return "unknown (no git here)"
    changed = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True,
                             text=True).stdout.strip()
    return done.stdout.strip() + ("+changes" if changed else "")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bundle", type=Path, default=ROOT / "gpu-bundle")
    parser.add_argument("--report", type=Path, default=ROOT / "gpu-report")
    parser.add_argument("--rehearsal", action="store_true", help="the same steps, small, on a CPU")
    parser.add_argument("--benchmarks-only", action="store_true",
                        help="the benchmarks alone, and the candidate settings after them (a run spent on the "
                        "training step's speed)")
    parser.add_argument("--science", action="store_true",
                        help="a run spent on the paper's findings: longer pre-training (profiles/gpu-science.yaml), "
                        "Table 5, the gap against pre-training tokens, one headline benchmark")
    parser.add_argument("--budget", type=float, default=None,
                        help="seconds for every step together (default: 540 on a GPU, fitting a 10-minute GPU budget with "
                        "the machine's start; 1,500 for the rehearsal)")
    args = parser.parse_args(argv)
    if args.report.exists() and not (args.report / "report.json").is_file():
        sys.exit(f"gpu-check: {args.report} exists and is not a gpu-check report; choose another --report")
    args.report.mkdir(parents=True, exist_ok=True)
    budget = args.budget if args.budget is not None else (1500 if args.rehearsal else 540)
    check = Check(args.bundle.resolve(), args.report.resolve(), args.rehearsal, budget, science=args.science)
    check.describe_machine()
    check.install()
    if args.science:
        if check.pretrain():
            check.sweep()
            check.table5()
            check.transfer_curve()
        check.benchmark(headline=True)
        check.figures()
    else:
        check.benchmark(candidates=args.benchmarks_only)
    if not args.benchmarks_only and not args.science:
        if check.pretrain():
            check.sweep()
            check.table5()
        check.gpu_tests()
        check.figures()
    check.finish()
    print(f"gpu-check: report in {args.report / 'report.md'}")


if __name__ == "__main__":
    main()
