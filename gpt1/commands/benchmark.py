"""Training-step throughput of our GPT1 against transformers' OpenAIGPTLMHeadModel, side by side.

Both models get the same config, batch, dropout, optimiser (fused AdamW with the same decay groups),
precision, thread count and device. One timed "step" is forward + loss + backward + gradient clipping +
optimizer step + zero_grad, synchronised on CUDA. The two models are timed in alternating rounds after a
warm-up, so a slow patch of a shared machine hits both; the reported figure is the median round.

Each result carries two yardsticks for the achieved FLOP rate (gpt1.train.flops.flops_per_token: 6 N + 12 L d T
per token): the machine's own matrix product, measured in the same process at the same precision and thread
count (2048³ on a CPU, 8192³ on a GPU; the median of several), so that "fraction of matmul" means the same on
every machine; and MFU against the device's peak at the precision used (gpt1.train.flops): a known GPU's
data-sheet figure (on CUDA fp32 means TF32, which the benchmark allows), a CPU's own measured matmul, and no MFU
for a GPU the table does not know. The peak used is named in the printed line and the JSON.

Named configs: `default` (params.yaml's model) and `mid` at the corpus vocabulary (data/tokens/meta.json, or
GPT-1's when absent), and `paper`, GPT-1's own sizes, which reads no data folder at all. On CUDA, with no
config named, the benchmark measures `paper`: a GPU run is for the model the project trains there.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import statistics
import time
from pathlib import Path
from typing import Callable

import torch

from gpt1 import layout
from gpt1.errors import UserError
from gpt1.model.lm import GPT1, TransformerConfig, decay_groups
from gpt1.model.lm_loss import checked_lm_loss_kind
from gpt1.train import precision
from gpt1.train.flops import Peak, flops_per_token, gpu_peak, measured_peak, model_flops_utilisation
from gpt1.train.loop import build_optimizer

# A mid-size shape between the CPU default and GPT-1.
MID_SIZE = dict(n_layer=6, d_model=512, n_head=8, d_ff=2048, n_positions=256)
# GPT-1 (the paper, Section 4.1): 12 layers of 768 with 12 heads, 3072-wide MLPs, 512 positions, dropout 0.1,
# and the released BPE's 40,478 tokens (~116.5M parameters; the paper rounds to 117M).
PAPER_SIZE = dict(vocab_size=40478, n_positions=512, n_layer=12, n_head=12, d_model=768, d_ff=3072,
                  embd_dropout=0.1, attn_dropout=0.1, resid_dropout=0.1)
CONFIG_NAMES = ("default", "mid", "paper")


def build_reference(config: TransformerConfig) -> torch.nn.Module:
    """transformers' OpenAI GPT at our config (same shape, dropout, init range, tied output)."""
    try:
        from transformers import OpenAIGPTConfig, OpenAIGPTLMHeadModel
    except ImportError:
        raise UserError("the reference model needs transformers, which only the test extra installs: "
                        "pip install 'gpt1[test]' (as `make install` does), or run without it: "
                        "--no-reference") from None

    from gpt1.model.weights import hf_config_dict

    settings = hf_config_dict(config)
    settings.pop("model_type"), settings.pop("architectures")
    return OpenAIGPTLMHeadModel(OpenAIGPTConfig(**settings))


def _step_function(model: torch.nn.Module, is_reference: bool, input_ids: torch.Tensor,
                   targets: torch.Tensor, autocast: contextlib.AbstractContextManager) -> Callable[[], None]:
    optimizer = build_optimizer(decay_groups(model, 0.01), lr=1e-4, betas=(0.9, 0.999), eps=1e-8)

    def step() -> None:
        with autocast:
            if is_reference:  # transformers shifts the labels itself
                loss = model(input_ids=input_ids, labels=input_ids).loss
            else:
                loss = model(input_ids, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return step


def _time(step: Callable[[], None], steps: int, device: torch.device) -> float:
    if device.type == "cuda":
        torch.cuda.synchronize()
    started = time.perf_counter()
    for _ in range(steps):
        step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - started


def matmul_throughput(device: torch.device, dtype: torch.dtype, repeats: int = 5) -> tuple[int, float]:
    """(size, FLOP/s) of one square matrix product on `device` at `dtype`: the median of `repeats` after a warm-up."""
    size = 8192 if device.type == "cuda" else 2048
    generator = torch.Generator().manual_seed(0)
    a, b = (torch.randn(size, size, generator=generator).to(device=device, dtype=dtype) for _ in range(2))
    product = lambda: torch.mm(a, b)  # noqa: E731
    _time(product, 2, device)
    seconds = statistics.median(_time(product, 3, device) / 3 for _ in range(repeats))
    return size, 2 * size**3 / seconds


def run_benchmark(config: TransformerConfig, batch: int, seq: int, steps: int = 5, warmup: int = 2,
                  rounds: int = 5, device: str = "cpu", compile: bool = False, seed: int = 0,
                  threads: int | None = None, dtype: str = "auto", compile_mode: str | None = None,
                  lm_loss: str = "chunked", reference: bool = True, deterministic: bool = True,
                  pad_vocab_to: int | None = None, breakdown: bool = False, bf16_layer_norm: bool = False) -> dict:
    """Tokens/s of one training step for both models; `ratio` > 1 means ours is faster. `threads` sets
    torch's CPU thread count for both (default: leave it as it is); `dtype` bfloat16 runs both under bf16
    autocast (auto: on CUDA only). The candidates for a faster step: `compile_mode` (torch.compile's mode,
    e.g. max-autotune-no-cudagraphs, or reduce-overhead for CUDA graphs; compiles), `lm_loss` (our model's LM loss,
    gpt1/model/lm_loss.py), `deterministic` False (CUDA's non-deterministic kernels allowed, which training on a
    device does not allow: gpt1.train.precision.deterministic), `bf16_layer_norm` (gpt1.model.lm.LayerNorm's
    keeps_autocast_dtype). `reference` False times our model alone (ratio None)."""
    compile = compile or compile_mode is not None
    device_ = precision.resolve_device(device, key="--device")
    if not deterministic:
        torch.use_deterministic_algorithms(False)
    if threads is not None:
        torch.set_num_threads(threads)
    if seq > config.n_positions:
        raise ValueError(f"seq {seq} exceeds n_positions {config.n_positions}")
    if device_.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    bf16 = dtype == "bfloat16" or (dtype == "auto" and device_.type == "cuda")
    autocast = precision.autocast(device_, "bfloat16" if bf16 else "float32")
    generator = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, config.vocab_size, (batch, seq + 1), generator=generator).to(device_)
    input_ids, targets = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()
    torch.manual_seed(seed)
    models = {"gpt1": GPT1(config).to(device_).train()}
    models["gpt1"].lm_loss_kind = checked_lm_loss_kind(lm_loss)
    models["gpt1"].pad_vocab_to = pad_vocab_to
    models["gpt1"].keep_autocast_dtype_in_layer_norms(bf16_layer_norm)
    output_rows = models["gpt1"].output_weight().shape[0]
    if reference:
        models["transformers"] = build_reference(config).to(device_).train()
    per_token = flops_per_token(models["gpt1"].num_parameters(), config.n_layer, config.d_model, seq)
    if compile:
        models = {name: torch.compile(model, mode=compile_mode) for name, model in models.items()}
    steps_by_name = {name: _step_function(model, name == "transformers", input_ids, targets, autocast)
                     for name, model in models.items()}
    for name, step in steps_by_name.items():
        _time(step, warmup, device_)
    seconds: dict[str, list[float]] = {name: [] for name in models}
    for round_index in range(rounds):
        # Alternate which model goes first, so neither always runs on a machine the other just warmed.
        order = list(steps_by_name) if round_index % 2 == 0 else list(reversed(steps_by_name))
        for name in order:
            seconds[name].append(_time(steps_by_name[name], steps, device_))
    tokens_per_step = batch * seq
    size, matmul_flops = matmul_throughput(device_, torch.bfloat16 if bf16 else torch.float32)
    peak = device_peak(device_, bf16, size, matmul_flops)
    result: dict = {"config": {**config.__dict__}, "batch": batch, "seq": seq, "steps": steps, "rounds": rounds,
                    "device": str(device_), "device_name": device_name(device_), "threads": torch.get_num_threads(),
                    "compile": compile, "compile_mode": compile_mode, "lm_loss": lm_loss,
                    "deterministic": deterministic,
                    "layer_norm_output": "bf16" if bf16 and bf16_layer_norm else "fp32",
                    "output_rows": output_rows,
                    "precision": "bf16 autocast" if bf16 else "fp32",
                    "cpu_capability": cpu_capability(), "matmul": {"size": size, "tflops": matmul_flops / 1e12},
                    "peak": None if peak is None else {"name": peak.name, "tflops": peak.flops / 1e12}}
    for name, values in seconds.items():
        tokens_per_second = tokens_per_step * steps / statistics.median(values)
        result[name] = {"tokens_per_second": tokens_per_second,
                        "rounds_tokens_per_second": [tokens_per_step * steps / value for value in values],
                        "achieved_tflops": tokens_per_second * per_token / 1e12,
                        "fraction_of_matmul": tokens_per_second * per_token / matmul_flops,
                        "mfu": None if peak is None else model_flops_utilisation(tokens_per_second, per_token,
                                                                                 peak.flops)}
    result["flops_per_token"] = per_token
    if breakdown:
        from gpt1.commands.step_profile import step_breakdown

        step_seconds = statistics.median(seconds["gpt1"]) / steps
        result["breakdown"] = step_breakdown(steps_by_name["gpt1"], device_, step_seconds=step_seconds)
    result["ratio"] = (result["gpt1"]["tokens_per_second"] / result["transformers"]["tokens_per_second"]
                       if reference else None)
    return result


def device_name(device: torch.device) -> str:
    return torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"


def device_peak(device: torch.device, bf16: bool, matmul_size: int, matmul_flops: float) -> Peak | None:
    """What MFU is taken against: on CUDA the GPU's data-sheet peak at bf16 or, for fp32, TF32 (which
    run_benchmark allows); elsewhere the matmul just measured at the precision used. None: an unknown GPU."""
    if device.type == "cuda":
        return gpu_peak(device_name(device), "bf16" if bf16 else "tf32")
    return measured_peak(matmul_size, matmul_flops, "bf16" if bf16 else "fp32")


def cpu_capability() -> str:
    """ATen's kernel level (AVX2, AVX512, ...; ATEN_CPU_CAPABILITY lowers it) and the CPU's own vector flags."""
    flags = set()
    with contextlib.suppress(OSError):
        flags = set(Path("/proc/cpuinfo").read_text().split())
    shown = [flag for flag in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if flag in flags]
    return f"{torch.backends.cpu.get_cpu_capability()} kernels; CPU flags {' '.join(shown) or 'unknown'}"


def paper_config() -> TransformerConfig:
    """GPT-1's sizes, whatever params.yaml and the data folder hold."""
    return TransformerConfig(**PAPER_SIZE)


def corpus_vocab_size() -> int:
    """The tokenized corpus's vocabulary (data/tokens/meta.json), else GPT-1's BPE with the 3 special tokens."""
    meta = layout.TOKENS / "meta.json"
    return json.loads(meta.read_text())["vocab_size"] if meta.is_file() else 40478 + 3


def named_configs(names: list[str], model_params, vocab_size: int | None = None) -> dict[str, TransformerConfig]:
    """The configs `names` (CONFIG_NAMES) call for; the corpus vocabulary is read only when default or mid
    needs it and `vocab_size` is not given."""
    unknown = [name for name in names if name not in CONFIG_NAMES]
    if unknown:
        raise UserError(f"unknown benchmark config {unknown[0]!r}; use {', '.join(CONFIG_NAMES)}")
    if any(name != "paper" for name in names) and vocab_size is None:
        vocab_size = corpus_vocab_size()
    return {name: paper_config() if name == "paper" else default_configs(model_params, vocab_size)[name]
            for name in names}


def default_configs(model_params, vocab_size: int) -> dict[str, TransformerConfig]:
    """The params.yaml model section and the mid-size shape, both at the corpus vocabulary."""
    default = TransformerConfig(vocab_size=vocab_size, n_positions=model_params.n_positions,
                                n_layer=model_params.n_layer, n_head=model_params.n_head,
                                d_model=model_params.d_model, d_ff=model_params.d_ff,
                                embd_dropout=model_params.dropout, attn_dropout=model_params.attn_dropout,
                                resid_dropout=model_params.dropout)
    mid = TransformerConfig(vocab_size=vocab_size, embd_dropout=model_params.dropout,
                            attn_dropout=model_params.attn_dropout, resid_dropout=model_params.dropout, **MID_SIZE)
    return {"default": default, "mid": mid}


def format_result(name: str, result: dict) -> str:
    ours, reference = result["gpt1"], result.get("transformers")
    how = "compiled" + (f" ({result['compile_mode']})" if result.get("compile_mode") else "") if result["compile"] \
        else "eager"
    line = (f"{name}: L{result['config']['n_layer']} d{result['config']['d_model']} T{result['seq']} "
            f"B{result['batch']} {result['precision']} {how}, {result.get('lm_loss', 'chunked')} LM loss"
            f"{'' if result.get('deterministic', True) else ', non-deterministic kernels'}"
            f"{', bf16 LayerNorm outputs' if result.get('layer_norm_output') == 'bf16' else ''}"
            f"{'' if result.get('output_rows') in (None, result['config']['vocab_size']) else ', output layer padded to ' + format(result['output_rows'], ',') + ' rows'}, on "
            f"{result['device']} ({result['threads']} threads): gpt1 {ours['tokens_per_second']:,.0f} tok/s")
    if reference is not None:
        line += f", transformers {reference['tokens_per_second']:,.0f} tok/s, ratio {result['ratio']:.2f}x"
    line += (f"; gpt1 {ours['achieved_tflops'] * 1e3:,.0f} GFLOP/s = {ours['fraction_of_matmul']:.0%} of this "
             f"machine's {result['matmul']['size']}³ matmul ({result['matmul']['tflops'] * 1e3:,.0f} GFLOP/s)")
    if reference is not None:
        line += f", transformers {reference['fraction_of_matmul']:.0%}"
    peak = result["peak"]
    if peak is None:
        line += f"; MFU unknown (no known peak for {result['device_name']})"
    else:
        line += f"; MFU gpt1 {ours['mfu']:.1%}"
        if reference is not None:
            line += f", transformers {reference['mfu']:.1%}"
        line += f" of {peak['name']} ({peak['tflops']:.4g} TFLOP/s)"
    return line


def main(params, configs: list[str] | None = None, batch: int | None = None, steps: int = 5,
         warmup: int = 2, rounds: int = 5, device: str = "auto", compile: bool = False,
         vocab_size: int | None = None, output=None, threads: int | None = None, dtype: str = "auto",
         compile_mode: str | None = None, lm_loss: str = "chunked", reference: bool = True,
         deterministic: bool = True, pad_vocab_to: int | None = None, breakdown: bool = False,
         dropout: float | None = None, bf16_layer_norm: bool = False) -> dict:
    """What `gpt1 benchmark` runs: every named config (CONFIG_NAMES; none named: default and mid, or paper on
    CUDA), printed and returned as a dict. `dropout` replaces the config's three dropout rates (what they cost)."""
    if pad_vocab_to is not None and pad_vocab_to < 1:
        raise UserError(f"--pad-vocab-to {pad_vocab_to}: give a multiple of 1 or more (1: no padding)")
    if dropout is not None and not 0 <= dropout < 1:
        raise UserError(f"--dropout {dropout}: give a rate from 0 up to, not including, 1")
    if not configs:
        configs = ["paper"] if precision.resolve_device(device, key="--device").type == "cuda" else ["default", "mid"]
    results = {}
    for name, config in named_configs(configs, params.model, vocab_size).items():
        if dropout is not None:
            config = dataclasses.replace(config, embd_dropout=dropout, attn_dropout=dropout, resid_dropout=dropout)
        micro_batch = batch or params.pretrain.micro_batch_size
        results[name] = run_benchmark(config, micro_batch, config.n_positions, steps, warmup, rounds,
                                      device=device, compile=compile, threads=threads, dtype=dtype,
                                      compile_mode=compile_mode, lm_loss=lm_loss, reference=reference,
                                      deterministic=deterministic, pad_vocab_to=pad_vocab_to, breakdown=breakdown,
                                      bf16_layer_norm=bf16_layer_norm)
        print(format_result(name, results[name]), flush=True)
        if breakdown:
            from gpt1.commands.step_profile import format_breakdown

            print(f"{name}: {format_breakdown(results[name]['breakdown'])}", flush=True)
    if results:
        print(f"({next(iter(results.values()))['cpu_capability']})", flush=True)
    if output is not None:
        Path(output).parent.mkdir(parents=True, exist_ok=True)
        Path(output).write_text(json.dumps(results, indent=2) + "\n")
    return results
