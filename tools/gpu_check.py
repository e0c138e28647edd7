"""`make gpu-check`: on a GPU machine with no network, from the folder `make gpu-bundle` made, in one command: the
paper model's throughput beside transformers' (and the candidate settings for a faster step, with where the step's
time goes), the GPU profile end to end through Snakemake to Table 5 with intervals, its fine-tuning rate chosen on
dev first, the GPU tests, and Figure 2's panels. One report (report.md and the report.json it is written from)
names every figure, the device and the versions.

Each step runs under its own time limit and the report is rewritten after every step, so a step that fails or runs
out of time still leaves the others' figures. The steps run in the order of what they are worth: the benchmark
(minutes of a window buy its figures for sure), pretraining, the dev sweep, Table 5, the tests, the figures.

    python3 tools/gpu_check.py [--bundle gpu-bundle] [--report gpu-report] [--rehearsal] [--benchmarks-only]
                               [--science]

--science (`make gpu-science`) spends the window on the paper's findings instead: the GPU profile with the longer
pre-training of profiles/gpu-science.yaml, the dev sweep, Table 5, the transfer curve over every task (the gap
full − w/o pre-training against pre-training tokens, and the tokens a log-linear fit of it reaches the paper's
size of gap at), then one headline benchmark line; no GPU tests.

--rehearsal runs the same steps on a CPU, small (the tiny profile's shapes over the GPU profile, CPU devices, a
tiny benchmark): what the test suite and a developer run before a GPU window.
"""

from __future__ import annotations

import argparse
import csv
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

ROOT = Path(__file__).resolve().parents[1]
PROFILE = "profiles/gpu.yaml"
REHEARSAL_OVERLAY = "tools/gpu-check-rehearsal.yaml"
SCIENCE_OVERLAY = "profiles/gpu-science.yaml"
# The stages that run here; the data stages (encode-zeroshot's candidates too) ran where the bundle was made, and
# their outputs are in it.
GPU_RULES = ["pretrain", "starting_model", "finetune", "layer_transfer", "transfer_curve", "baselines", "evaluate",
             "ablation", "layer_figure", "transfer_figure", "zeroshot"]
PRETRAINED = ["data/pretrain/transformer/model.safetensors", "data/pretrain/lstm/model.safetensors"]
TABLE5 = ["results/ablation.md", "results/ablation_intervals.csv"]
FIGURES = ["results/layer_transfer.png", "results/transfer_curve.png", "results/zero_shot.png"]
TRANSFER_CURVE = ["results/transfer_curve.png"]  # with results/transfer_curve.csv and its trend beside it
# The gap full − w/o pre-training (mean over tasks, ×100) the science window aims at: the paper's is +14.8.
GAP_TARGET = 12.0
ZERO_SHOT_TREND = "results/zero_shot_trend.csv"
# The dev sweep before Table 5: finetune.lr (every method that starts from a pretrained model) for `full`, one seed,
# every task at once, one candidate after another as the time allows; the best mean dev score (each task's first
# metric) is the rate Table 5 trains with. The test scores those runs also write are never read.
SWEEP_RATES = [2.5e-4, 1.0e-4, 5.0e-4]  # the GPU profile's rate (chosen over 6.25e-5 and 1e-4 as the largest
# tried: docs/results/gpu/gpu-check.json), a smaller one and a larger one
SWEEP_SEED = 1
# The fastest settings known for the paper model's step: the dense LM loss, CUDA's non-deterministic kernels, 64 rows.
FASTEST = ["--compile", "--lm-loss", "dense", "--nondeterministic", "--batch", "64"]
BENCHMARKS = {  # name: arguments after `gpt1 benchmark`, in the order of what they are worth, the output layer padded
    # as a GPU always runs it: the fastest settings with bf16 LayerNorm outputs beside transformers, then without them,
    # each with the step's time split; the project's compiled default beside transformers
    "fastest_bf16_layer_norm": [*FASTEST, "--bf16-layer-norm", "--breakdown"],
    "fastest": [*FASTEST, "--no-reference", "--breakdown"],
    "compiled": ["--compile"],
}
# With --benchmarks-only, after those: twice the rows, and the output layer unpadded (what the padding is worth).
# (torch.compile's max-autotune did not finish tuning this model within 300 s on an H200, and cuBLAS won the matrix
# products it had tuned; CUDA graphs gained nothing on a step whose device idles 2 ms of 61: neither is here.)
CANDIDATES = {
    "bf16_layer_norm_batch128": [*FASTEST, "--bf16-layer-norm", "--no-reference", "--batch", "128"],
    "fastest_unpadded": [*FASTEST, "--no-reference", "--pad-vocab-to", "1"],
}
# The science window's one benchmark line: the fastest settings at 128 rows with bf16 LayerNorm outputs and the LM
# loss fused with the output layer (chunked), the candidate for a step past 45 % MFU.
HEADLINE = {"headline_chunked_loss": ["--compile", "--lm-loss", "chunked", "--nondeterministic", "--bf16-layer-norm",
                                      "--no-reference", "--batch", "128"]}
GPU_BENCHMARK = ["--configs", "paper", "--device", "cuda", "--dtype", "bfloat16", "--rounds", "3", "--batch", "32"]
CPU_BENCHMARK = ["--configs", "default", "--device", "cpu", "--dtype", "float32", "--rounds", "1", "--steps", "1",
                 "--batch", "2"]
STAMP = "data/.gpu-bundle.json"  # which bundle's data this checkout holds (written when it was unpacked here)


class Check:
    """The steps, their limits and the report they fill."""

    def __init__(self, bundle: Path, report: Path, rehearsal: bool, budget_seconds: float, science: bool = False):
        self.bundle, self.report, self.rehearsal, self.science = bundle, report, rehearsal, science
        self.site = Path("/tmp/gpt1-gpu-site") if not rehearsal else report / "site"
        self.started = time.monotonic()
        self.deadline = self.started + budget_seconds
        self.facts: dict = {"started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                            "rehearsal": rehearsal, "science": science, "steps": {}}
        (report / "logs").mkdir(parents=True, exist_ok=True)

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

    def gpu_tests(self) -> bool:
        return self.run("gpu_tests", [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "gpu",
                                      "tests/test_gpu.py"], limit=120)

    def profiles(self) -> list[str]:
        """The GPU profile, the science window's overlay, the rehearsal's on a CPU, and the rate the dev sweep chose
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

    def pretrain(self) -> bool:
        return self.snakemake("pretrain", PRETRAINED, limit=600 if self.rehearsal else 330 if self.science else 180)

    def sweep(self) -> None:
        """SWEEP_RATES for `full` on dev (see there), into <report>/sweep/; writes <report>/chosen.yaml."""
        one_off = ROOT / "results" / "one-off" / "finetune"
        if one_off.exists():
            raise SystemExit(f"gpu-check: {one_off} exists and is not this check's; run the check in a fresh clone")
        tasks = self.tasks()
        scores: dict[str, dict[str, float]] = {}
        for rate in SWEEP_RATES:
            name = f"sweep_lr_{rate:g}"
            overlay = self.report / "sweep" / f"lr_{rate:g}.yaml"
            overlay.parent.mkdir(parents=True, exist_ok=True)
            overlay.write_text(json.dumps({"finetune": {"lr": rate}}) + "\n")  # JSON is YAML
            profile_flags = [argument for path in [*self.profiles(), overlay] for argument in ("--profile", str(path))]
            jobs = "".join(f"gpt1 {' '.join(profile_flags)} finetune --method full --task {task} --seed {SWEEP_SEED} & "
                           "pids+=($!); " for task in tasks)
            script = f"export OMP_NUM_THREADS=2; pids=(); {jobs}status=0; for p in ${{pids[@]}}; do wait $p || status=1; " \
                     "done; exit $status"
            passed = self.run(name, ["bash", "-c", script], limit=300 if self.rehearsal else 75)
            runs = self.report / "sweep" / f"lr_{rate:g}"
            if (one_off / "full").is_dir():
                shutil.move(str(one_off / "full"), runs)
                for weights in runs.rglob("*.safetensors"):  # the check's own runs: only their scores are kept
                    weights.unlink()
            if not passed:
                break
            dev = {}
            for task in tasks:
                metrics = runs / task / f"seed{SWEEP_SEED}" / "metrics.json"
                if metrics.is_file():  # each task's first metric (accuracy; Pearson for similarity)
                    dev[task] = next(iter(json.loads(metrics.read_text())["dev"].values()))
            if len(dev) == len(tasks):
                scores[f"{rate:g}"] = dev
        if one_off.is_dir() and not any(one_off.iterdir()):
            one_off.rmdir()
        if not scores:
            self.facts["sweep"] = {"status": "no candidate finished: Table 5 keeps the profile's rate"}
            return
        best = max(scores, key=lambda rate: sum(scores[rate].values()) / len(tasks))
        self.facts["sweep"] = {"method": "full", "seed": SWEEP_SEED, "split": "dev", "dev": scores, "chosen_lr": best}
        (self.report / "chosen.yaml").write_text(json.dumps({"finetune": {"lr": float(best)}}) + "\n")
        self.write_report()

    def tasks(self) -> list[str]:
        """The profile's fine-tuned tasks (a task scored with another's models has no run of its own)."""
        done = subprocess.run([sys.executable, "-c", "import sys, json; from gpt1.params.files import compose_raw; "
                               "from gpt1.params.schema import parse_params; raw, source = compose_raw('params.yaml', "
                               "sys.argv[1:]); data = parse_params(raw, source).data; "
                               "print(json.dumps([t for t in data.tasks if data.model_of(t) is None]))",
                               *self.profiles()], cwd=ROOT, env=self.environment(), capture_output=True, text=True,
                              check=True)
        return json.loads(done.stdout)

    def table5(self) -> bool:
        return self.snakemake("table5", TABLE5, limit=900 if self.rehearsal else 200)

    def figures(self) -> bool:
        return self.snakemake("figures", FIGURES, limit=900 if self.rehearsal else 150)

    def transfer_curve(self) -> bool:
        """The transfer curve (every task, with the science overlay) and the gap it gives (see gap_facts)."""
        passed = self.snakemake("transfer_curve", TRANSFER_CURVE, limit=900 if self.rehearsal else 150)
        self.facts["gap"] = gap_facts(ROOT / "results" / "transfer_curve.csv", self.environment())
        self.write_report()
        return passed

    def benchmark(self, candidates: bool = False, headline: bool = False) -> None:
        """BENCHMARKS, then (`candidates`) CANDIDATES; or (`headline`) HEADLINE alone."""
        common = CPU_BENCHMARK if self.rehearsal else GPU_BENCHMARK
        chosen = HEADLINE if headline else {**BENCHMARKS, **(CANDIDATES if candidates else {})}
        for name, arguments in chosen.items():
            if self.rehearsal:  # compiling on a CPU takes minutes: the rehearsal checks the commands, eager
                arguments = eager(arguments)
            output = self.report / f"benchmark_{name}.json"
            self.run(f"benchmark_{name}", ["gpt1", "benchmark", *common, *arguments, "--output", str(output)],
                     limit=150)

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
        benchmarks = {}
        for name in {**BENCHMARKS, **CANDIDATES, **HEADLINE}:
            path = self.report / f"benchmark_{name}.json"
            if path.is_file():
                result = next(iter(json.loads(path.read_text()).values()))
                benchmarks[name] = {"tokens_per_second": round(result["gpt1"]["tokens_per_second"]),
                                    "mfu": result["gpt1"]["mfu"], "peak": result["peak"],
                                    "output_rows": result.get("output_rows"), "breakdown": result.get("breakdown"),
                                    "matmul_tflops": result["matmul"]["tflops"], "batch": result["batch"],
                                    "precision": result["precision"], "compile_mode": result.get("compile_mode"),
                                    "lm_loss": result.get("lm_loss"),
                                    "layer_norm_output": result.get("layer_norm_output")}
                if "transformers" in result:
                    benchmarks[name]["transformers_tokens_per_second"] = round(
                        result["transformers"]["tokens_per_second"])
                    benchmarks[name]["transformers_mfu"] = result["transformers"]["mfu"]
                    benchmarks[name]["ratio"] = result["ratio"]
        self.facts["benchmark"] = benchmarks
        pretraining = {}
        for kind in ("transformer", "lstm"):
            path = ROOT / "results" / "pretrain" / kind / "metrics.json"
            if path.is_file():
                pretraining[kind] = json.loads(path.read_text())
        self.facts["pretraining"] = pretraining
        table = ROOT / "results" / "ablation.md"
        self.facts["table5_markdown"] = table.read_text() if table.is_file() else None
        for figure in [*FIGURES, ZERO_SHOT_TREND, "results/zero_shot.csv"]:
            if (ROOT / figure).is_file():
                shutil.copy2(ROOT / figure, self.report / Path(figure).name)
        trend = ROOT / ZERO_SHOT_TREND
        self.facts["zero_shot_trend"] = list(csv.DictReader(trend.open())) if trend.is_file() else None

    def write_report(self) -> None:
        self.facts["seconds"] = round(time.monotonic() - self.started, 1)
        (self.report / "report.json").write_text(json.dumps(self.facts, indent=2, default=str) + "\n")
        (self.report / "report.md").write_text(render(self.facts))

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


def render(facts: dict) -> str:
    machine = facts.get("machine", {})
    lines = [f"# gpu-check{' (rehearsal on a CPU)' if facts['rehearsal'] else ''}", "",
             f"Started {facts['started']}; {facts.get('seconds', 0):.0f} s by its own clock. "
             f"Commit {machine.get('commit')}; Python {machine.get('python')}, torch {machine.get('torch')}, "
             f"CUDA {machine.get('cuda')}; {machine.get('gpu') or 'no GPU (' + str(machine.get('cpu_capability')) + ')'}"
             f"; {machine.get('cpu_count')} CPUs.", "", "| step | status | seconds |", "|---|---|---|"]
    lines += [f"| {name} | {step.get('status')} | {step.get('seconds')} |" for name, step in facts["steps"].items()]
    benchmarks = facts.get("benchmark") or {}
    if benchmarks:
        lines += ["", "## The paper model's training step (batch x 512 tokens)", "",
                  "| setting | precision | gpt1 tokens/s | MFU | transformers tokens/s | MFU | ratio |",
                  "|---|---|---|---|---|---|---|"]
        for name, result in benchmarks.items():
            mfu = "-" if result["mfu"] is None else f"{result['mfu']:.1%}"
            theirs = result.get("transformers_tokens_per_second")
            lines.append(f"| {name} (batch {result['batch']}) | {result['precision']} | "
                         f"{result['tokens_per_second']:,} | {mfu} | {'-' if theirs is None else f'{theirs:,}'} | "
                         f"{'-' if result.get('transformers_mfu') is None else format(result['transformers_mfu'], '.1%')}"
                         f" | {'-' if result.get('ratio') is None else format(result['ratio'], '.2f') + 'x'} |")
        peak = next(iter(benchmarks.values()))["peak"]
        if peak:
            lines.append(f"\nMFU against {peak['name']} ({peak['tflops']:.4g} TFLOP/s). Output layer rows: "
                         + ", ".join(f"{name} {result.get('output_rows')}" for name, result in benchmarks.items())
                         + ".")
        for name, result in benchmarks.items():
            split = result.get("breakdown")
            if split:
                lines += ["", f"Where {name}'s step goes ({split['wall_seconds'] * 1e3:.1f} ms a step, "
                          f"torch.profiler over {split['steps']} steps):", "", "| part | ms a step | share |",
                          "|---|---|---|"]
                parts = dict(split["seconds"])
                if split.get("device_idle_seconds") is not None:
                    parts["device idle (waiting on the host)"] = split["device_idle_seconds"]
                lines += [f"| {part} | {seconds * 1e3:.2f} | {seconds / split['wall_seconds']:.1%} |"
                          for part, seconds in parts.items()]
    for kind, metrics in (facts.get("pretraining") or {}).items():
        lines.append(f"\nPretraining {kind}: validation loss {metrics.get('val', {}).get('loss')}, "
                     f"{metrics.get('train_seconds_this_run')} s of training, {metrics.get('device')}, "
                     f"{metrics.get('precision')}.")
    sweep = facts.get("sweep")
    if sweep and sweep.get("dev"):
        tasks = list(next(iter(sweep["dev"].values())))
        lines += ["", f"## The dev sweep: finetune.lr for {sweep['method']}, seed {sweep['seed']}, dev scores x100", "",
                  "| lr | " + " | ".join(tasks) + " | mean |", "|---" * (len(tasks) + 2) + "|"]
        for rate, dev in sweep["dev"].items():
            lines.append(f"| {rate}{' (chosen)' if rate == sweep['chosen_lr'] else ''} | "
                         + " | ".join(f"{dev[task] * 100:.1f}" for task in tasks)
                         + f" | {sum(dev.values()) / len(dev) * 100:.1f} |")
    elif sweep:
        lines.append(f"\nThe dev sweep: {sweep['status']}.")
    if facts.get("zero_shot_trend"):
        lines += ["", "## Zero-shot over pretraining (Figure 2, right; first to last checkpoint, computed direction)", "",
                  "| model | heuristic | first | last | difference | direction |", "|---|---|---|---|---|---|"]
        lines += [f"| {row['model']} | {row['task']} | {float(row['first']):.3f} | {float(row['last']):.3f} | "
                  f"{float(row['difference']):+.3f} ± {1.96 * float(row['se']):.3f} | {row['direction']} |"
                  for row in facts["zero_shot_trend"]]
    gap = facts.get("gap")
    if gap and gap.get("points"):
        lines += ["", "## The gap full − w/o pre-training against pre-training tokens (test, mean over tasks, x100)", "",
                  "| updates | tokens | gap |", "|---|---|---|"]
        lines += [f"| {point['updates']:,} | {point['tokens']:,} | {point['gap']:+.1f} |" for point in gap["points"]]
        reach = gap.get("tokens_for_target")
        lines.append(f"\nA least-squares line through the gap against log10(tokens) reaches +{gap['target']:g} at "
                     + (f"{reach:.3g} tokens." if reach else "no token count: it does not rise."))
    elif gap:
        lines.append(f"\nThe gap against pre-training tokens: {gap['status']}.")
    if facts.get("table5_markdown"):
        lines += ["", "## Table 5 on the GPU profile (test scores, 95 % intervals)", "", facts["table5_markdown"]]
    failed = {name: step for name, step in facts["steps"].items() if step.get("status") not in ("passed", None)}
    for name, step in failed.items():
        lines += ["", f"## {name}: the end of its log", "", "```", *step.get("tail", []), "```"]
    return "\n".join(lines) + "\n"


def gap_facts(curve_csv: Path, environment: dict[str, str]) -> dict:
    """The gap full − w/o pre-training at each point of the transfer curve and the tokens its log-linear fit reaches
    GAP_TARGET at (gpt1/eval/transfer_curve.py, run with the check's packages)."""
    if not curve_csv.is_file():
        return {"status": f"not measured: {curve_csv.name} was not written"}
    script = ("import json, sys; import pandas as pd; "
              "from gpt1.eval.transfer_curve import pretraining_gap, tokens_for_gap; "
              "table = pd.read_csv(sys.argv[1]); gap = pretraining_gap(table); "
              "print(json.dumps({'tasks': sorted(table['task'].unique()), 'points': [{'updates': int(row.updates), "
              "'tokens': int(row.tokens), 'gap': float(row.gap)} for row in gap.itertuples()], "
              "'tokens_for_target': tokens_for_gap(gap, float(sys.argv[2]))}))")
    done = subprocess.run([sys.executable, "-c", script, str(curve_csv), str(GAP_TARGET)], cwd=ROOT, env=environment,
                          capture_output=True, text=True)
    if done.returncode != 0:
        return {"status": "not computed: " + (done.stderr.strip().splitlines() or ["no output"])[-1]}
    return {"target": GAP_TARGET, **json.loads(done.stdout)}


def eager(arguments: list[str]) -> list[str]:
    """Benchmark arguments without --compile and without --compile-mode and its value."""
    kept, given = [], iter(arguments)
    for argument in given:
        if argument == "--compile-mode":
            next(given, None)  # and its value
        elif argument != "--compile":
            kept.append(argument)
    return kept


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
                        help="the benchmarks alone, and the candidate settings after them (a window spent on the "
                        "training step's speed)")
    parser.add_argument("--science", action="store_true",
                        help="a window spent on the paper's findings: longer pre-training (profiles/gpu-science.yaml), "
                        "Table 5, the gap against pre-training tokens, one headline benchmark")
    parser.add_argument("--budget", type=float, default=None,
                        help="seconds for every step together (default: 540 on a GPU, fitting a 10-minute window with "
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
