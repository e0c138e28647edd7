"""`gpt1 plan`: the training work the params ask for, and what it costs on N GPUs, before any of it runs.

Work is counted in FLOPs, as the benchmark and the pretraining log count it (gpt1/train/flops.py: 6 N + 12 L d T
a token for the Transformer; the LSTM has no attention term, so 6 N). Time is FLOPs over the FLOP rate a
measured training step achieved (tokens/s x that model's FLOPs a token), so a figure measured on the paper's model
carries over to the other sizes as a FLOP rate, not as tokens/s.
"""

from __future__ import annotations

import datetime
import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

from gpt1.commands.plan_corpus import CorpusSize, corpus_size
from gpt1.commands.plan_data import data_stage_rows, disk_rows, full_size_run, read_rates
from gpt1.commands import plan_evaluation
from gpt1.commands.plan_tasks import TaskWork, task_work, trained_tasks
from gpt1.errors import UserError
from gpt1.kinds import DISPLAY_NAMES, KINDS, LSTM, TRANSFORMER
from gpt1.layout import TOKENS_META
from gpt1.params.schedule import PretrainSchedule
from gpt1.train.flops import flops_per_token

GPT1_BASE_SYMBOLS, SPECIAL_TOKENS = 478, 3  # the released BPE: 478 base symbols + 40,000 merges, then _start_ etc.


@dataclass(frozen=True)
class Throughput:
    tokens_per_second: float
    flops_per_token: float  # of the model it was measured on
    device: str
    date: str
    setting: str
    source: str

    @property
    def flops(self) -> float:
        """The model FLOP rate the measured step achieved, what every estimate divides by."""
        return self.tokens_per_second * self.flops_per_token


# The paper model's step in the paper profile's settings (64 x 512 tokens a pass, bf16, compiled, dense LM loss,
# non-deterministic kernels): the entry of that name in docs/results/gpu/2026-11-26/benchmark-candidates.json,
# measured on the H200 of the GPU check that docs/results/gpu/2026-11-26/gpu-check.json records.
MEASURED = Throughput(514_487.2112496955, 755_831_808.0, "NVIDIA H200", "2026-11-26",
                      "paper model, bf16 autocast, compiled, dense LM loss, non-deterministic kernels, batch 64 x 512",
                      "docs/results/gpu/2026-11-26/benchmark-candidates.json")


def read_throughput(path: Path) -> Throughput:
    """The result in a `gpt1 benchmark --output` file: its `paper` config, or its only one."""
    try:
        results = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise UserError(f"--throughput {path}: not a readable JSON file ({error})") from None
    names = list(results) if isinstance(results, dict) else []
    name = "paper" if "paper" in names else names[0] if len(names) == 1 else None
    if name is None:
        raise UserError(f"--throughput {path}: expected the JSON `gpt1 benchmark --output` writes, with a `paper` "
                        f"result or a single one; found {', '.join(names) or 'none'}")
    result = results[name]
    try:
        rate, per_token = float(result["gpt1"]["tokens_per_second"]), float(result["flops_per_token"])
    except (KeyError, TypeError, ValueError):
        raise UserError(f"--throughput {path}: result {name!r} lacks gpt1.tokens_per_second or flops_per_token "
                        "(the fields `gpt1 benchmark --output` writes)") from None
    if not (rate > 0 and per_token > 0):
        raise UserError(f"--throughput {path}: result {name!r} has no positive tokens/s and FLOPs a token")
    date = datetime.date.fromtimestamp(Path(path).stat().st_mtime).isoformat()
    how = "compiled" if result.get("compile") else "eager"
    setting = (f"{name} config, {result.get('precision', '?')}, {how}, {result.get('lm_loss', '?')} LM loss, "
               f"batch {result.get('batch', '?')} x {result.get('seq', '?')}")
    return Throughput(rate, per_token, str(result.get("device_name", "an unnamed device")), f"file of {date}",
                      setting, str(path))


def vocab_size(params) -> tuple[int, str]:
    """The vocabulary pretraining builds its models with, and where the figure comes from."""
    meta = TOKENS_META
    if meta.is_file():
        return json.loads(meta.read_text())["vocab_size"], f"{meta}"
    if params.bpe.import_from:
        return 40_000 + GPT1_BASE_SYMBOLS + SPECIAL_TOKENS, "the released BPE"
    return (params.bpe.merges + GPT1_BASE_SYMBOLS + SPECIAL_TOKENS,
            "assumed: bpe.merges + GPT-1's 478 base symbols + 3 special tokens; a corpus with more characters has more")


def model_sizes(params, vocab: int) -> dict[str, tuple[int, float]]:
    """{kind: (parameters, training FLOPs a pretraining token)}, counted on models built without memory."""
    import torch

    from gpt1.model.lm import build_model
    from gpt1.train.model_configs import model_config

    sizes = {}
    for kind, section in ((TRANSFORMER, params.model), (LSTM, params.lstm)):
        with torch.device("meta"):
            parameters = build_model(kind, model_config(section, vocab)).num_parameters()
        attention_layers = params.model.n_layer if kind == TRANSFORMER else 0  # the LSTM: 6 N, no attention
        sizes[kind] = parameters, flops_per_token(parameters, attention_layers, params.model.d_model,
                                                  params.model.n_positions)
    return sizes


def pretraining_rows(params, sizes, throughput: Throughput, gpus: int, corpus: CorpusSize) -> list[dict]:
    rows = []
    for kind in KINDS:  # dvc.yaml pretrains both kinds: fine-tuning and the zero-shot analysis read them
        schedule = PretrainSchedule.of(params.pretrain, kind, corpus.tokens)
        if not schedule.known:
            raise UserError(f"pretrain.epochs counts the {kind}'s updates over the corpus, whose size is not known "
                            f"({corpus.source}): set the folder in data.local_paths, or run `gpt1 prepare`")
        updates = schedule.updates
        tokens = updates * params.pretrain.tokens_per_update
        flops = tokens * sizes[kind][1]
        hours = flops / throughput.flops / 3600
        rows.append(dict(model=DISPLAY_NAMES[kind], parameters=sizes[kind][0], updates=updates, tokens=tokens,
                         flops=flops, gpu_hours=hours, wall_hours=hours / gpus))
    return rows


def finetuning_runs(params) -> list[tuple[str, str, str, int]]:
    """(DAG job, method, task, runs) for every fine-tuning the DAG trains: a finetune job per (method, task) runs
    every seed; the analyses' jobs (one per task) fine-tune `full` from fewer blocks or earlier checkpoints."""
    trained, _ = trained_tasks(params)
    seeds, analysis = len(params.finetune.seeds), params.analysis
    runs = [(f"finetune@{method}-{task}", method, task, seeds) for method in params.finetune.methods
            for task in trained]
    runs += [(f"layer_transfer@{task}", "layer_transfer", task,
              len(analysis.layer_transfer_layers) * len(analysis.layer_transfer_seeds))
             for task in analysis.layer_transfer_tasks]
    runs += [(f"transfer_curve@{task}", "transfer_curve", task,
              len(analysis.transfer_curve_steps) * len(analysis.layer_transfer_seeds))
             for task in analysis.transfer_curve_tasks]
    return [run for run in runs if run[3]]


def finetuning_rows(params, sizes, throughput: Throughput) -> list[dict]:
    works: dict[str, TaskWork] = {}
    rows = []
    for job, method, task, runs in finetuning_runs(params):
        work = works.setdefault(task, task_work(task, params))
        kind = (params.methods[method].starts_from if method in params.methods else None) or TRANSFORMER
        tokens = params.finetune.epochs * work.tokens_per_epoch * runs
        flops = 6 * sizes[kind][0] * tokens  # forward + backward over every weight; the head's few are left out
        rows.append(dict(job=job, method=method, task=task, examples=work.examples,
                         updates_per_run=params.finetune.epochs * math.ceil(work.examples / params.finetune.batch_size),
                         runs=runs, tokens=tokens, flops=flops, gpu_hours=flops / throughput.flops / 3600,
                         source="prepared" if work.measured else "estimate"))
    return rows


def plan(params, gpus: int = 1, throughput: Throughput = MEASURED, cores: int = 2) -> dict:
    """Every figure `gpt1 plan` prints, as one dict (what --json writes); the data stages on `cores` CPU cores."""
    if gpus < 1:
        raise UserError(f"--gpus {gpus}: give at least 1 GPU")
    if cores < 1:
        raise UserError(f"--cores {cores}: give at least 1 core")
    vocab, vocab_source = vocab_size(params)
    sizes = model_sizes(params, vocab)
    corpus = corpus_size(params)
    pretraining = pretraining_rows(params, sizes, throughput, gpus, corpus)
    finetuning = finetuning_rows(params, sizes, throughput)
    jobs: dict[str, float] = {}
    for row in finetuning:
        jobs[row["job"]] = jobs.get(row["job"], 0.0) + row["gpu_hours"]
    longest = max(jobs, key=jobs.__getitem__, default=None)
    finetune_hours = sum(jobs.values())
    # Jobs run side by side, one GPU each: the longest job, or the whole spread over the GPUs, whichever is longer.
    finetune_wall = max(jobs.get(longest, 0.0), finetune_hours / gpus)
    pretrain_wall = sum(row["wall_hours"] for row in pretraining)  # each kind's pretraining takes every GPU in turn
    rates = read_rates()
    data_stages = data_stage_rows(corpus.bytes, cores, rates) if rates is not None and corpus.bytes else None
    measured = full_size_run()
    full_size = asdict(measured) if measured else None
    evaluation_rates = plan_evaluation.read_rates()
    examples = {row["task"]: row["examples"] for row in finetuning if row["method"] in params.finetune.methods}
    evaluation = (None if evaluation_rates is None
                  else plan_evaluation.evaluation_figures(params, examples, cores, evaluation_rates))
    return dict(gpus=gpus, throughput={**asdict(throughput), "achieved_flops": throughput.flops},
                vocab_size=vocab, vocab_source=vocab_source, corpus=asdict(corpus), epochs=params.pretrain.epochs,
                pretraining=pretraining, finetuning=finetuning,
                finetuning_jobs=jobs, longest_job=longest, finetuning_gpu_hours=finetune_hours,
                finetuning_wall_hours=finetune_wall,
                total_gpu_hours=sum(row["gpu_hours"] for row in pretraining) + finetune_hours,
                total_wall_hours=pretrain_wall + finetune_wall, scored_with_another_model=trained_tasks(params)[1],
                cores=cores, data_stages=data_stages, data_stages_measured=rates is not None,
                data_at_full_size=full_size, evaluation=evaluation,
                disk=disk_rows(params, corpus.bytes, corpus.tokens, sizes))
