"""The CUDA paths, for the first machine with a GPU (`pytest -m gpu`; docs/gpu.md): every fine-tuning method's
losses and an update on the GPU, pretraining in bf16 with its MFU, the fused LM loss, torch.compile against eager,
and a resume against an uninterrupted run (within a tolerance: flash attention's backward may not repeat bit for
bit). Without CUDA every test here is skipped with one line."""

from __future__ import annotations

import json
import math

import pytest
import torch

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]


@pytest.mark.parametrize("name", ["full", "no_pretrain", "no_aux_lm", "lstm"])
def test_every_method_trains_an_update_on_the_gpu(name):
    from gpt1 import methods
    from gpt1.model.heads import collate
    from gpt1.model.transforms import EncodedExample
    from gpt1.train import finetune, finetune_loop
    from gpt1.train.loop import TrainingState
    from test_finetune import SPECS, tiny_params, tiny_task_model

    device = torch.device("cuda")
    method = methods.resolve(name, tiny_params())
    model = tiny_task_model(SPECS["rt_polarity"], dropout=0.1, kind=method.starts_from or
                            "transformer").to(device).train()
    batch = collate([EncodedExample(((40, 1, 2, 3, 42),), 1), EncodedExample(((40, 4, 42),), 0)], regression=False)
    lm_coef = method.lm_coef
    state = TrainingState.start(model, model.parameter_groups(0.01), 1e-3, (0.9, 0.999), 1e-8, lambda step: 1.0)
    autocast = torch.autocast("cuda", dtype=torch.bfloat16)
    losses, grad_norm = state.update([lambda: finetune_loop.batch_losses(model, batch.to(device), lm_coef)], 1.0,
                                     autocast=autocast)
    assert losses.device.type == "cuda" and torch.isfinite(losses).all() and grad_norm > 0


def test_the_fused_lm_loss_equals_the_unfused_one_on_the_gpu():
    from test_lm_loss import _inputs, _reference, _value_and_grads
    from gpt1.model.lm_loss import linear_cross_entropy

    inputs = [tensor.cuda() for tensor in _inputs(rows=300, width=64, vocab=500)]
    ours = _value_and_grads(lambda h, w, t: linear_cross_entropy(h, w, t, 64), *inputs)
    for got, expected in zip(ours, _value_and_grads(_reference, *inputs)):
        torch.testing.assert_close(got, expected, atol=1e-4, rtol=1e-4)


def _pretrain(tmp_path, name, model=None, **changes):
    from test_resume import cli_project, run_cli
    from test_pretrain import tiny_raw_params

    raw = tiny_raw_params(**{**dict(max_steps=60, save_interval=20, eval_interval=30, checkpoints=3, device="cuda",
                                    dtype="auto"), **changes})
    raw["model"].update(model or {})
    project = cli_project(tmp_path, name, raw)
    done = run_cli(project, "pretrain", "--kind", "transformer")
    assert done.returncode == 0, done.stderr[-3000:]
    return project


def test_pretraining_runs_in_bf16_on_the_gpu_and_reports_its_mfu(tmp_path):
    from gpt1.train.flops import gpu_peak

    project = _pretrain(tmp_path, "bf16")
    metrics = json.loads((project / "results/pretrain/transformer/metrics.json").read_text())
    assert metrics["device"].startswith("cuda") and metrics["precision"] == "bf16 autocast"
    assert math.isfinite(metrics["val"]["loss"])
    mfu = project / "results/pretrain/transformer/plots/metrics/train/mfu.tsv"
    if gpu_peak(torch.cuda.get_device_name(), "bf16") is None:
        assert not mfu.exists()  # an unknown GPU: no MFU against a guessed peak
    else:
        values = [float(line.split("\t")[-1]) for line in mfu.read_text().splitlines()[1:]]
        assert values and all(0 < value < 1 for value in values)


def test_compiled_pretraining_matches_eager_on_the_gpu(tmp_path):
    """Without dropout, compiled and eager training compute the same function, so they must agree closely.

    With dropout they need not: torch.compile's generated kernels draw their dropout masks from Inductor's own
    random-number stream (Philox offsets of its own, on CPUs too), not from the eager kernels' stream, so a compiled
    run drops other units than an eager run of the same seed: the two differ as two seeds do (on one H200, 60
    updates with dropout 0.1: validation loss 2.826 eager vs 2.877 compiled). A run without dropout isolates what
    compilation may change: the arithmetic. In fp32 on CUDA both use TF32 matrix products (pretraining allows
    them), whose rounding differs between eager and generated kernels and grows over 60 updates at a learning rate
    of 1e-2: the weights agree to a few 1e-2, not to fp32 tolerances (on one H200: largest difference 0.017), and
    the validation loss within 0.2 % (which a pair with dropout, at 1.8 %, fails)."""
    no_dropout = dict(dropout=0.0, attn_dropout=0.0)
    eager = _pretrain(tmp_path, "eager", model=no_dropout, dtype="float32")
    compiled = _pretrain(tmp_path, "compiled", model=no_dropout, dtype="float32", compile=True)
    losses = [json.loads((project / "results/pretrain/transformer/metrics.json").read_text())["val"]["loss"]
              for project in (eager, compiled)]
    assert math.isclose(*losses, rel_tol=0.002), losses
    from test_pretrain import state_dict

    reference = state_dict(eager / "data/pretrain/transformer/model.safetensors")
    weights = state_dict(compiled / "data/pretrain/transformer/model.safetensors")
    largest = max((weights[name] - reference[name]).abs().max().item() for name in reference)
    assert largest < 0.05, f"largest weight difference {largest:.3g}"
