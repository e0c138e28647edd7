"""Stage pretrain: schedule, batching, unigram baseline and a tiny end-to-end run of each model.

The helpers at the top (tiny params, a tiny learnable corpus, a subprocess runner) are shared with
test_resume.py and test_ddp.py.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from gpt1.commands.benchmark import flops_per_token, model_flops_utilisation, run_benchmark
from gpt1.train.batches import WindowSampler, evaluation_starts, unigram_perplexity
from gpt1.params.schema import parse_params
from gpt1.errors import UserError
from gpt1.model.lm import TransformerConfig, build_model, load_model
from gpt1.stages.pretrain import run
from gpt1.train.loop import build_optimizer, load_state
from gpt1.layout import pretraining_checkpoint
from gpt1.train.pretrain import _log_step
from gpt1.train.pretrain_settings import PretrainSettings, batch_split
from gpt1.params.schedule import PretrainSchedule, log_spaced_updates
from gpt1.train.lr_schedules import warmup_cosine
import tiny

ROOT = Path(__file__).resolve().parents[1]
VOCAB = 40


def tiny_raw_params(**pretrain) -> dict:
    """params.yaml with a tiny model, LSTM and pretraining schedule; keywords override `pretrain` keys."""
    schedule = dict(device="cpu", dtype="auto", compile=False, micro_batch_size=4, tokens_per_update=128,
                    max_steps=40, warmup_steps=4, eval_interval=10, eval_tokens=320, checkpoints=4, save_interval=10,
                    weight_decay=0.01, grad_clip=1.0, transformer={"max_lr": 1e-2}, lstm={"max_lr": 1e-2})
    return tiny.tiny_raw_params(model={"n_positions": 16}, pretrain={**schedule, **pretrain})


def write_tokens(folder: Path, train_tokens: int = 12_000, val_tokens: int = 2_000) -> Path:
    """A corpus a model can learn: the sequence 0, 1, ..., VOCAB-1 repeated, 10 % of tokens replaced by noise."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    clean = np.arange(train_tokens + val_tokens) % VOCAB
    tokens = np.where(rng.random(clean.size) < 0.1, rng.integers(0, VOCAB, clean.size), clean).astype(np.uint16)
    tokens[:train_tokens].tofile(folder / "train.bin")
    tokens[train_tokens:].tofile(folder / "val.bin")
    (folder / "meta.json").write_text(json.dumps({"dtype": "uint16", "vocab_size": VOCAB}))
    return folder


RUNNER = """
import json, os, sys
from pathlib import Path
import torch
torch.set_num_threads(1)  # the same arithmetic in every process that is compared
from gpt1.params.schema import parse_params
from gpt1.stages.pretrain import run
raw, kind, tokens, out, metrics = sys.argv[1:]
result = run(parse_params(json.loads(Path(raw).read_text())), kind, Path(tokens), Path(out), Path(metrics))
if os.environ.get("RANK", "0") == "0":  # under torchrun, one result line
    print("RESULT " + json.dumps(result), flush=True)
"""


def runner_command(tmp_path: Path, raw: dict, name: str, kind: str = "transformer") -> tuple[list[str], Path]:
    """(argv tail after the interpreter, run folder) for one run of RUNNER on tmp_path/tokens."""
    (tmp_path / "runner.py").write_text(RUNNER)
    (tmp_path / f"{name}.json").write_text(json.dumps(raw))
    folder = tmp_path / name
    return [str(tmp_path / "runner.py"), str(tmp_path / f"{name}.json"), kind, str(tmp_path / "tokens"),
            str(folder / "out"), str(folder / "metrics")], folder


def subprocess_environment() -> dict[str, str]:
    # ROOT first, the caller's own path after it (a machine whose packages are on PYTHONPATH, e.g. carried wheels)
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": path}


def run_in_subprocess(tmp_path: Path, raw: dict, name: str, kind: str = "transformer") -> dict:
    argv, _ = runner_command(tmp_path, raw, name, kind)
    done = subprocess.run([sys.executable, *argv], capture_output=True, text=True, env=subprocess_environment(),
                          timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.split("RESULT ", 1)[1])


def state_dict(path: Path) -> dict[str, torch.Tensor]:
    return load_model(path).state_dict()


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny models run fastest on one thread, and a busy machine slows multi-threaded kernels the most."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# ---- pieces -----------------------------------------------------------------------------------------

def test_learning_rate_warms_up_linearly_then_anneals_to_zero():
    warmup, total = 10, 100
    factors = [warmup_cosine(step, warmup, total) for step in range(total)]
    assert factors[0] == pytest.approx(0.1) and factors[4] == pytest.approx(0.5) and factors[9] == 1.0
    assert factors[10] == 1.0  # the cosine starts at the peak
    assert factors[55] == pytest.approx(0.5)  # half-way through the cosine
    assert all(later <= earlier for earlier, later in zip(factors[10:], factors[11:]))
    assert 0 < factors[-1] < 0.001 and warmup_cosine(total, warmup, total) == pytest.approx(0.0)


def test_checkpoints_are_log_spaced_from_the_first_to_the_last_update():
    steps = log_spaced_updates(1000, 8)
    assert steps[0] == 1 and steps[-1] == 1000 and len(steps) == 8
    ratios = [later / earlier for earlier, later in zip(steps[1:], steps[2:])]
    assert all(2.2 < ratio < 3.0 for ratio in ratios)  # 1000 ** (1/7) = 2.68, rounded to whole updates
    assert log_spaced_updates(3, 8) == [1, 2, 3] and log_spaced_updates(50, 1) == [50]


def test_pretraining_settings_take_each_models_own_section_or_name_the_kinds():
    params = parse_params(tiny_raw_params())
    assert PretrainSettings.of(params, "transformer").size is params.model
    lstm = PretrainSettings.of(params, "lstm")
    assert lstm.size is params.lstm and lstm.n_positions == params.model.n_positions  # the Transformer's windows
    with pytest.raises(UserError, match="unknown model kind 'gru'; use 'transformer' or 'lstm'"):
        PretrainSettings.of(params, "gru")


def test_the_batch_split_fills_tokens_per_update_or_names_the_keys_to_change():
    params = parse_params(tiny_raw_params(micro_batch_size=2, tokens_per_update=128))
    length = params.model.n_positions
    assert batch_split(params.pretrain, length, world_size=1) == (2, 4)  # 2 x 16 x 4 = 128
    assert batch_split(params.pretrain, length, world_size=2) == (2, 2)
    assert batch_split(params.pretrain, length, world_size=8) == (1, 1)  # one window each: the micro-batch shrinks
    with pytest.raises(UserError, match=r"tokens_per_update 128 is not a whole number of model.n_positions 16 token "
                                        r"windows for each of 3 process\(es\).*pretrain.processes_per_node"):
        batch_split(params.pretrain, length, world_size=3)


@pytest.mark.parametrize("processes", [1, 2, 4, 8])
def test_the_paper_profile_trains_the_same_updates_on_1_2_4_or_8_processes(processes):
    """64 sequences of 512 tokens per update: 16 per pass on one GPU (4 passes), 8 per GPU on 8 (8 x 16 x 512 was
    twice the update before the micro-batch could shrink)."""
    from gpt1.params.files import compose_raw

    params = parse_params(compose_raw(ROOT / "params.yaml", [ROOT / "profiles/paper.yaml"])[0])
    micro, accumulation = batch_split(params.pretrain, params.model.n_positions, processes)
    assert micro <= params.pretrain.micro_batch_size
    assert micro * params.model.n_positions * accumulation * processes == params.pretrain.tokens_per_update == 32768


def test_optimizer_is_adamw_with_the_paper_settings_and_decay_on_matrices_only():
    params = parse_params(tiny_raw_params())
    model = build_model("transformer", {"vocab_size": VOCAB, "n_positions": 16, "n_layer": 1, "n_head": 2,
                                         "d_model": 32, "d_ff": 64})
    settings = params.pretrain
    optimizer = build_optimizer(model.parameter_groups(settings.weight_decay), settings.transformer.max_lr,
                                settings.betas, settings.eps)
    assert isinstance(optimizer, torch.optim.AdamW)
    decayed, plain = optimizer.param_groups
    assert decayed["betas"] == tuple(params.pretrain.betas) and decayed["eps"] == 1e-8 and decayed["lr"] == 1e-2
    assert decayed["weight_decay"] == 0.01 and all(p.dim() >= 2 for p in decayed["params"])
    assert plain["weight_decay"] == 0.0 and all(p.dim() == 1 for p in plain["params"])
    assert len(decayed["params"]) + len(plain["params"]) == len(list(model.parameters()))


def test_sampler_yields_contiguous_shifted_windows_in_a_seeded_order():
    tokens = np.arange(1000, dtype=np.uint16)
    sampler = WindowSampler(tokens, length=10, seed=3)
    inputs, targets = sampler.batch(0, 8)
    assert inputs.shape == targets.shape == (8, 10) and inputs.dtype == torch.int64
    assert torch.equal(targets, inputs + 1)  # the next token, from the same contiguous stretch
    assert torch.equal(inputs[:, 1:] - inputs[:, :-1], torch.ones(8, 9, dtype=torch.int64))
    assert torch.equal(WindowSampler(tokens, 10, seed=3).batch(0, 8)[0], inputs)
    assert not torch.equal(WindowSampler(tokens, 10, seed=4).batch(0, 8)[0], inputs)
    # Any split of a run of sequence numbers gives the same windows: ranks and micro-batches agree.
    assert torch.equal(torch.cat([sampler.batch(0, 3)[0], sampler.batch(3, 5)[0]]), inputs)
    # One epoch visits every window once, all at the epoch's offset; the next epoch is shuffled anew.
    epoch = sampler.starts(0, sampler.windows_per_epoch)
    assert sampler.windows_per_epoch == 99 and len(set(epoch.tolist())) == 99 and len(set(epoch % 10)) == 1
    assert epoch.max() + 11 <= len(tokens)
    assert not np.array_equal(sampler.starts(99, 99), epoch)


def test_sampler_refuses_a_corpus_shorter_than_two_windows():
    with pytest.raises(UserError, match="too few"):
        WindowSampler(np.arange(15, dtype=np.uint16), length=10, seed=0)


def test_evaluation_windows_are_fixed_evenly_spread_and_capped():
    val = np.arange(1000, dtype=np.uint16)
    starts = evaluation_starts(val, length=10, eval_tokens=200)
    assert len(starts) == 20 and starts[0] == 0 and starts[-1] == 1000 - 11
    assert np.array_equal(starts, evaluation_starts(val, 10, 200))
    assert len(evaluation_starts(val, 10, 10**9)) == 99  # no more than fit without overlap


def test_unigram_perplexity_uses_add_one_smoothed_training_counts():
    train = np.array([0, 0, 0, 1], dtype=np.uint16)  # counts 3, 1, 0 -> (4, 2, 1) / 7
    val = np.array([0, 1, 2, 0, 2], dtype=np.uint16)  # window at 0 of length 2: targets 1, 2
    expected = math.exp(-(math.log(2 / 7) + math.log(1 / 7)) / 2)
    assert unigram_perplexity(train, val, np.array([0]), 2, vocab_size=3) == pytest.approx(expected)


# ---- end to end -------------------------------------------------------------------------------------

def test_logging_a_step_costs_as_much_late_in_a_run_as_early(tmp_path):
    """DVCLive's next_step re-read every plot file at every update: 4,000 updates spent ~40 s on it on 2 cores,
    most of it near the end. A logged step must cost the same at step 3,000 as at step 1."""
    from dvclive import Live

    live = Live(dir=str(tmp_path), save_dvc_exp=False, dvcyaml=None)
    seconds = []
    for step in range(1, 3001):
        started = time.perf_counter()
        _log_step(live, {"step": step, "train/loss": 1.0 / step, "train/grad_norm": 0.5, "train/tokens": step})
        seconds.append(time.perf_counter() - started)
    early, late = sorted(seconds[:300])[150], sorted(seconds[-300:])[150]  # medians
    assert late < 3 * early + 1e-4, (early, late)
    rows = (tmp_path / "plots" / "metrics" / "train" / "loss.tsv").read_text().splitlines()
    assert len(rows) == 1 + 3000 and rows[-1] == f"3000\t{1 / 3000}"


def test_transformer_pretrains_below_unigram_and_writes_every_output(tmp_path):
    tokens = write_tokens(tmp_path / "tokens")
    params = parse_params(tiny_raw_params())
    result = run(params, "transformer", tokens, tmp_path / "out", tmp_path / "metrics")

    assert result["steps"] == 40 and result["tokens"] == 40 * 128 and result["resumed_from_step"] == 0
    assert result["val_perplexity"] < 0.5 * result["unigram_val_perplexity"]
    assert result["unigram_val_perplexity"] == pytest.approx(VOCAB, rel=0.1)  # near-uniform token counts
    names = sorted(path.name for path in (tmp_path / "out" / "checkpoints").iterdir())
    # the names fine-tuning from a checkpoint (the transfer curve) looks for
    assert names == sorted(pretraining_checkpoint("transformer", step, tmp_path).name for step in log_spaced_updates(40, 4))
    assert not (tmp_path / "out" / "resume.pt").exists()
    assert not (tmp_path / "out" / "resume-checkpoints").exists()
    final = load_model(tmp_path / "out" / "model.safetensors")
    assert final.kind == "transformer" and final.config.vocab_size == VOCAB
    last = state_dict(tmp_path / "out" / "checkpoints" / "step_40.safetensors")
    assert all(torch.equal(tensor, last[name]) for name, tensor in final.state_dict().items())
    first = state_dict(tmp_path / "out" / "checkpoints" / "step_1.safetensors")
    assert not torch.equal(first["h.0.attn.c_attn.weight"], last["h.0.attn.c_attn.weight"])

    metrics = json.loads((tmp_path / "metrics" / "metrics.json").read_text())
    assert metrics["step"] == 40 and metrics["val"]["perplexity"] == pytest.approx(result["val_perplexity"])
    assert metrics["unigram_val_perplexity"] == pytest.approx(result["unigram_val_perplexity"])
    assert list(metrics)[0] == "val" and set(metrics["train"]) == {"loss", "grad_norm", "tokens"}
    # the one number dvc.yaml declares as metrics, named by the model so that `dvc exp show` reads it unprefixed
    headline = json.loads((tmp_path / "metrics" / "headline.json").read_text())
    assert headline == {"transformer": {"val_loss": pytest.approx(metrics["val"]["loss"])}}
    curves = tmp_path / "metrics" / "plots" / "metrics"
    losses = [float(line.split("\t")[1]) for line in (curves / "train" / "loss.tsv").read_text().splitlines()[1:]]
    assert len(losses) == 40 and losses[-1] < losses[0] - 0.5
    assert len((curves / "val" / "perplexity.tsv").read_text().splitlines()) == 1 + 4  # header + 4 evaluations
    learning_rates = (curves / "train" / "learning_rate.tsv").read_text().splitlines()[1:]
    assert float(learning_rates[3].split("\t")[1]) == pytest.approx(1e-2)  # the peak after 4 warmup updates
    assert (curves / "train" / "tokens_per_second.tsv").is_file()
    assert not (tmp_path / "dvc.yaml").exists() and not (tmp_path / "metrics" / "dvc.yaml").exists()

    # A second run gives byte-identical model files (timings live only in the metrics).
    again = run(params, "transformer", tokens, tmp_path / "again", tmp_path / "metrics_again")
    assert again["val_loss"] == result["val_loss"]
    for path in [tmp_path / "out" / "model.safetensors", *sorted((tmp_path / "out" / "checkpoints").iterdir())]:
        twin = tmp_path / "again" / path.relative_to(tmp_path / "out")
        assert path.read_bytes() == twin.read_bytes(), path.name


def test_lstm_pretrains_with_the_same_stage(tmp_path):
    tokens = write_tokens(tmp_path / "tokens")
    params = parse_params(tiny_raw_params(max_steps=30, checkpoints=2))
    result = run(params, "lstm", tokens, tmp_path / "out", tmp_path / "metrics")
    model = load_model(tmp_path / "out" / "model.safetensors")
    assert model.kind == "lstm" and model.config.d_hidden == 48
    assert sorted(path.name for path in (tmp_path / "out" / "checkpoints").iterdir()) == [
        "step_1.safetensors", "step_30.safetensors"]
    assert result["val_perplexity"] < result["unigram_val_perplexity"]


def test_missing_tokens_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="tokenize"):
        run(parse_params(tiny_raw_params()), "transformer", tmp_path / "nothing", tmp_path / "out", tmp_path / "m")


# ---- throughput yardstick (gpt1.commands.benchmark) ----------------------------------------------------------

def test_flops_per_token_matches_the_papers_anchor_and_mfu_divides_by_the_peak():
    gpt1_flops = flops_per_token(116_534_784, n_layer=12, d_model=768, sequence_length=512)
    assert gpt1_flops == pytest.approx(0.756e9, rel=0.01)  # "about 0.76 GFLOP for GPT-1 at T = 512"
    # llm.c's anchor: ~470K tokens/s per H100 at ~41 % MFU for GPT-2 124M at T 1024.
    gpt2_flops = flops_per_token(124_439_808, n_layer=12, d_model=768, sequence_length=1024)
    assert model_flops_utilisation(470_000, gpt2_flops) == pytest.approx(0.40, abs=0.02)


def test_benchmark_times_both_models_on_the_same_batch():
    config = TransformerConfig(vocab_size=VOCAB, n_positions=16, n_layer=1, n_head=2, d_model=32, d_ff=128)
    result = run_benchmark(config, batch=2, seq=16, steps=1, warmup=1, rounds=2)
    for name in ("gpt1", "transformers"):
        assert len(result[name]["rounds_tokens_per_second"]) == 2 and result[name]["tokens_per_second"] > 0
    assert result["ratio"] == pytest.approx(result["gpt1"]["tokens_per_second"]
                                            / result["transformers"]["tokens_per_second"])
    assert result["flops_per_token"] == flops_per_token(build_model("transformer", config).num_parameters(), 1, 32, 16)
    # the machine's own matmul, measured beside them, is the yardstick the fraction is taken of
    assert result["matmul"]["size"] == 2048 and result["matmul"]["tflops"] > 0
    for name in ("gpt1", "transformers"):
        assert result[name]["fraction_of_matmul"] == pytest.approx(
            result[name]["achieved_tflops"] / result["matmul"]["tflops"])
    assert result["cpu_capability"].split()[0] in ("DEFAULT", "AVX2", "AVX512", "ZVECTOR", "NO AVX")


def test_init_from_released_weights_without_training(tmp_path):
    """pretrain.init_from + max_steps 0: the stage publishes the released weights (special-token rows added)."""
    transformers = pytest.importorskip("transformers")
    tokens = write_tokens(tmp_path / "tokens")
    shape = tiny_raw_params()["model"]
    config = transformers.OpenAIGPTConfig(vocab_size=VOCAB - 3, n_positions=shape["n_positions"],
                                          n_embd=shape["d_model"], n_layer=shape["n_layer"], n_head=shape["n_head"])
    released = transformers.OpenAIGPTLMHeadModel(config).eval()
    released.save_pretrained(tmp_path / "released")
    raw = tiny_raw_params(max_steps=0, init_from=str(tmp_path / "released"))
    raw["pretrain"]["lstm"]["max_steps"] = 20  # the LSTM has no released weights: it trains
    raw["model"]["d_ff"] = 4 * shape["d_model"]  # HF's OpenAIGPTConfig has no FFN width: always 4 d
    params = parse_params(raw)
    result = run(params, "transformer", tokens, tmp_path / "out", tmp_path / "metrics")
    assert result["steps"] == 0 and math.isfinite(result["val_loss"])
    ours = load_model(tmp_path / "out" / "model.safetensors")
    assert ours.config.vocab_size == VOCAB
    ids = torch.randint(0, VOCAB - 3, (2, shape["n_positions"]))
    with torch.no_grad():
        assert torch.allclose(ours(ids)[..., : VOCAB - 3], released(ids).logits, atol=1e-4)


def test_init_from_checks_the_shape(tmp_path):
    tokens = write_tokens(tmp_path / "tokens")
    from gpt1.model.lm import save_model

    save_model(build_model("transformer", dict(vocab_size=VOCAB, n_positions=16, n_layer=1, n_head=2, d_model=32,
                                               d_ff=64)), tmp_path / "other.safetensors")
    params = parse_params(tiny_raw_params(init_from=str(tmp_path / "other.safetensors")))
    with pytest.raises(UserError, match="set params.yaml's model section"):
        run(params, "transformer", tokens, tmp_path / "out", tmp_path / "metrics")


def test_zero_steps_needs_init_from():
    with pytest.raises(UserError, match="pretrain.max_steps is 0 but pretrain.init_from is not set"):
        parse_params(tiny_raw_params(max_steps=0))


def test_released_weights_recipe_trains_the_lstm_or_says_it_would_not(tmp_path):
    """The LSTM has no released weights: with max_steps 0 it must get steps of its own, never be published
    untrained (its random weights would stand for Table 5's lstm row and the zero-shot curves)."""
    raw = tiny_raw_params(max_steps=0, init_from="released")
    with pytest.raises(UserError, match="LSTM has no released weights.*set pretrain.lstm.max_steps"):
        parse_params(raw)
    raw["pretrain"]["lstm"]["max_steps"] = 6
    params = parse_params(raw)
    assert (PretrainSchedule.of(params.pretrain, "transformer").updates, PretrainSchedule.of(params.pretrain, "lstm").updates) == (0, 6)
    result = run(params, "lstm", write_tokens(tmp_path / "tokens"), tmp_path / "out", tmp_path / "metrics")
    assert result["steps"] == 6 and result["val_perplexity"] < result["unigram_val_perplexity"] * 2
    assert sorted(path.name for path in (tmp_path / "out" / "checkpoints").iterdir())[-1] == "step_6.safetensors"
