"""The report of `make gpu-check`: what its steps left (`collect`) and report.md written from it (`render`)."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

from gpu_steps import BENCHMARKS, CANDIDATES, FIGURES, HEADLINE, ZERO_SHOT_TREND


def collect(facts: dict, report: Path, root: Path) -> None:
    """Into `facts`: the benchmarks' figures, pretraining's metrics, Table 5 and the zero-shot trend; the figures
    copied beside the report."""
    benchmarks = {}
    for name in {**BENCHMARKS, **CANDIDATES, **HEADLINE}:
        path = report / f"benchmark_{name}.json"
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
    facts["benchmark"] = benchmarks
    pretraining = {}
    for kind in ("transformer", "lstm"):
        path = root / "results" / "pretrain" / kind / "metrics.json"
        if path.is_file():
            pretraining[kind] = json.loads(path.read_text())
    facts["pretraining"] = pretraining
    table = root / "results" / "ablation.md"
    facts["table5_markdown"] = table.read_text() if table.is_file() else None
    for figure in [*FIGURES, ZERO_SHOT_TREND, "results/zero_shot.csv"]:
        if (root / figure).is_file():
            shutil.copy2(root / figure, report / Path(figure).name)
    trend = root / ZERO_SHOT_TREND
    facts["zero_shot_trend"] = list(csv.DictReader(trend.open())) if trend.is_file() else None


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
