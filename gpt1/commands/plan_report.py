"""What `gpt1 plan` prints (tables and the assumptions under them) and writes with --json."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from gpt1.commands.plan import MEASURED, plan, read_throughput
from gpt1.commands.plan_data import FULL_SIZE, MEASUREMENT
from gpt1.commands.plan_evaluation import MEASUREMENT as EVALUATION_MEASUREMENT
from gpt1.files.atomic import atomic_write_text


def duration(hours: float) -> str:
    """A wall time a person reads at a glance."""
    seconds = hours * 3600
    if seconds < 60:
        return f"{seconds:.2g} s" if seconds < 10 else f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    return f"{hours:.1f} h" if hours < 48 else f"{hours / 24:.1f} days"


def _table(rows: list[dict], columns: dict[str, str], formats: dict) -> str:
    """`rows` as a text table: `columns` maps their keys to headings, `formats` a key to a function of its value."""
    frame = pd.DataFrame(rows, columns=list(columns))
    for column, form in formats.items():
        frame[column] = frame[column].map(form)
    return frame.rename(columns=columns).to_string(index=False)


def _count(value) -> str:
    return f"{value:,}"


def _rough(value) -> str:
    return f"{value:.3g}"


def _flops(value) -> str:
    mantissa, exponent = f"{value:.2e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def _gpus(count: int) -> str:
    return f"{count} GPU{'s' if count > 1 else ''}"


def corpus_line(figures: dict) -> str:
    """The corpus pretraining reads, and how many updates its epochs come to (where the length is in epochs)."""
    corpus, epochs = figures["corpus"], figures["epochs"]
    size = "unknown" if corpus["tokens"] is None else f"{corpus['tokens']:,} training tokens"
    unit = f"; {epochs:g} epochs of it" if epochs else ""
    return f"Corpus: {size} ({corpus['source']}){unit}."


def data_lines(figures: dict) -> list[str]:
    """The data stages' wall time and peak memory on the given cores, and the disk the run takes."""
    cores, stages = figures["cores"], figures["data_stages"]
    if stages is None:
        why = ("the corpus's size is unknown" if figures["data_stages_measured"]
               else f"no measured rates ({MEASUREMENT} is not at hand)")
        lines = [f"Data stages: not counted: {why}."]
    else:
        table = _table(stages, dict(stage="stage", hours="wall", peak_gb="peak memory (GB)"),
                       dict(hours=duration, peak_gb=lambda gb: f"{gb:.2f}"))
        source = MEASUREMENT.relative_to(MEASUREMENT.parents[2])
        lines = [f"Data stages on {cores} CPU core{'s' if cores > 1 else ''}, one after another (fitted from "
                 f"{source}: time as fixed + rate x corpus size, peak memory as a power of it, measured up to the "
                 "largest size it lists; more cores by Amdahl's law from 1 and 2):",
                 table,
                 f"In all: {duration(sum(row['hours'] for row in stages))}; the most memory one stage takes: "
                 f"{max(row['peak_gb'] for row in stages):.2f} GB."]
        measured = figures.get("data_at_full_size")  # plan_data.FullSizeRun's fields
        if measured:
            lines.append(f"Measured once at {measured['size_gb']:.1f} GB on {measured['cores']} cores of an "
                         f"{measured['cpu']} ({FULL_SIZE.relative_to(FULL_SIZE.parents[2])}): prepare, bpe and "
                         f"tokenize {measured['minutes']:.1f} min together, {measured['peak_gb']:.2f} GB at most.")
    disk = _table(figures["disk"], dict(what="on disk", gb="GB"), dict(gb=lambda gb: f"{gb:.2f}"))
    return [*lines, "", disk, f"In all: {sum(row['gb'] for row in figures['disk']):.2f} GB, besides the downloads, "
            "the encoded tasks, fine-tuning's runs and the environment."]


def evaluation_lines(figures: dict) -> list[str]:
    """encode_task's and the analyses' CPU time and peak memory."""
    source = EVALUATION_MEASUREMENT.relative_to(EVALUATION_MEASUREMENT.parents[2])
    found = figures["evaluation"]
    if found is None:
        return [f"Evaluation on CPUs: not counted: no measured rates ({source} is not at hand)."]
    cores = figures["cores"]
    return [f"Evaluation on {cores} CPU core{'s' if cores > 1 else ''} (from {source}):",
            f"- encode_task, a job per task side by side: {duration(found['encode_wall_hours'])} "
            f"({found['encode_core_hours']:.2g} core-hours; the longest job {found['encode_longest']}); peak memory "
            f"{found['encode_peak_gb']:.2f} GB in the largest job, each job holding its own.",
            f"- the analyses (Table 5, the majority checks, Tables 2-4, gpt1 compare) over "
            f"{found['analysis_runs']:,} runs (test sets x methods x seeds): {duration(found['analysis_hours'])} "
            "on one "
            f"core; peak memory {found['analysis_peak_gb']:.2f} GB."]


def render(figures: dict) -> str:
    gpus, rate = figures["gpus"], figures["throughput"]
    jobs, longest = figures["finetuning_jobs"], figures["longest_job"]
    pretraining = _table(figures["pretraining"], dict(model="model", parameters="parameters", updates="updates",
                                                      tokens="tokens", flops="FLOPs", gpu_hours="GPU-hours",
                                                      wall_hours="wall"),
                         dict(parameters=_count, updates=_count, tokens=_count, flops=_flops, gpu_hours=_rough,
                              wall_hours=duration))
    finetuning = _table(figures["finetuning"], dict(method="method", task="task", examples="examples",
                                                    updates_per_run="updates/run", runs="runs", tokens="tokens",
                                                    flops="FLOPs", gpu_hours="GPU-hours", source="source"),
                        dict(examples=_count, updates_per_run=_count, tokens=_count, flops=_flops, gpu_hours=_rough))
    lines = [f"Throughput: {rate['tokens_per_second']:,.0f} tokens/s x {rate['flops_per_token'] / 1e6:,.1f} MFLOP a "
             f"token = {rate['achieved_flops'] / 1e12:,.1f} TFLOP/s achieved ({rate['setting']}; {rate['device']}, "
             f"{rate['date']}; {rate['source']}). Every time below is FLOPs / that rate, per GPU.", "",
             corpus_line(figures),
             f"Pretraining (each model on {_gpus(gpus)} in turn; DDP assumed to scale linearly"
             f"{'' if gpus == 1 else ', on one node: torchrun --standalone'}):", pretraining, "",
             "Fine-tuning (runs: seeds, or an analysis's blocks or checkpoints x seeds; tokens: epochs x runs x the "
             "tokens of every sequence the examples make):", finetuning, "",
             f"Fine-tuning: {figures['finetuning_gpu_hours']:.3g} GPU-hours in {len(jobs)} jobs of the DAG (a finetune "
             f"job runs every seed of one method on one task). Side by side, a GPU each, on {_gpus(gpus)}: "
             f"{duration(figures['finetuning_wall_hours'])}, the longest job ({longest}: "
             f"{duration(jobs[longest]) if longest else '0 s'}) or all jobs / {gpus} "
             f"({duration(figures['finetuning_gpu_hours'] / gpus)}), whichever is longer.",
             f"In all: {figures['total_gpu_hours']:.3g} GPU-hours; {duration(figures['total_wall_hours'])} on "
             f"{_gpus(gpus)} (pretraining, then fine-tuning).", "", *data_lines(figures), "",
             *evaluation_lines(figures), "",
             "Assumptions:",
             f"- vocabulary {figures['vocab_size']:,} ({figures['vocab_source']})",
             "- FLOPs: pretraining 6 N + 12 L d T a token (as the benchmark's MFU; the LSTM 6 N), fine-tuning 6 N a "
             "token; tokens without padding; evaluation passes not counted",
             "- the rate is the paper model's pretraining step: smaller models, the LSTM's step-by-step recurrence "
             "and fine-tuning's short, padded batches reach less of a GPU, so their times are lower bounds",
             "- source prepared: read from data/task_tokens/<task>; estimate: the training split from upstream "
             "counts, tokens from assumed mean lengths (gpt1/commands/plan_tasks.py)"]
    lines += [f"- {task}: scored with another task's models by its jobs, trains nothing (its scoring not counted)"
              for task in figures["scored_with_another_model"]]
    return "\n".join(lines)


def main(params, gpus: int = 1, throughput: Path | None = None, output: Path | None = None, cores: int = 2) -> dict:
    figures = plan(params, gpus, MEASURED if throughput is None else read_throughput(throughput), cores)
    print(render(figures))
    if output is not None:
        atomic_write_text(output, json.dumps(figures, indent=2) + "\n")
    return figures
