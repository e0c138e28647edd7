"""The training machinery pretraining and fine-tuning share (gpt1/train/loop.py, precision.resolve_device)."""

from __future__ import annotations

import logging

import pytest
import torch

from gpt1.params.schema import parse_params
from gpt1.errors import UserError
from gpt1.train import distributed, precision
from gpt1.train.loop import Diverged, TrainingState, load_state, save_state
from gpt1.train.lr_schedules import warmup_linear
from test_pretrain import tiny_raw_params

SINGLE = distributed.Runtime(rank=0, world_size=1, local_rank=0, device=torch.device("cpu"))


def small_state(seed: int = 0) -> TrainingState:
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Dropout(0.3), torch.nn.Linear(8, 1))
    groups = [{"params": [p for p in model.parameters() if p.dim() >= 2], "weight_decay": 0.01},
              {"params": [p for p in model.parameters() if p.dim() < 2], "weight_decay": 0.0}]
    return TrainingState.start(model, groups, 1e-2, (0.9, 0.99), 1e-8, lambda step: warmup_linear(step, 20, 2))


def loss_of(state: TrainingState, inputs: torch.Tensor, targets: torch.Tensor):
    return lambda: ((state.model(inputs).squeeze(-1) - targets).pow(2).mean(),)


def batch(step: int) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(100 + step)
    return torch.randn(8, 6, generator=generator), torch.randn(8, generator=generator)


def test_micro_batches_average_to_the_gradient_of_the_whole_batch():
    whole, split = small_state(), small_state()
    whole.model.eval(), split.model.eval()  # no dropout: the two must see the same function
    inputs, targets = batch(0)
    loss, _ = whole.update([loss_of(whole, inputs, targets)], grad_clip=100.0)
    halves = [loss_of(split, inputs[:4], targets[:4]), loss_of(split, inputs[4:], targets[4:])]
    mean, _ = split.update(halves, grad_clip=100.0)
    assert mean[0].item() == pytest.approx(loss[0].item(), rel=1e-6)
    for a, b in zip(whole.model.parameters(), split.model.parameters()):
        torch.testing.assert_close(a, b)
    assert whole.step == split.step == 1 and all(p.grad is None for p in whole.model.parameters())


def test_update_clips_the_global_norm_and_follows_the_schedule():
    state = small_state()
    rates = []
    for step in range(3):
        rates.append(state.learning_rate)
        inputs, targets = batch(step)
        _, norm = state.update([loss_of(state, inputs * 1000, targets)], grad_clip=1e-3)
        assert norm > 1e-3  # reported before clipping
    assert rates == pytest.approx([5e-3, 1e-2, 1e-2 * 18 / 18])


def test_saved_state_continues_bit_for_bit_dropout_included(tmp_path):
    def run(state: TrainingState, steps: range) -> None:
        for step in steps:
            state.update([loss_of(state, *batch(step))], grad_clip=1.0)
            state.position += 8
            state.history.append({"step": state.step})

    reference = small_state()
    torch.manual_seed(7)
    run(reference, range(6))

    interrupted = small_state()
    torch.manual_seed(7)
    run(interrupted, range(3))
    save_state(interrupted, tmp_path / "resume.pt", "settings", SINGLE)
    torch.manual_seed(999)  # whatever the process did since, the saved RNG state wins

    resumed = small_state(seed=5)  # other initial weights: all of them must come from the file
    saved, status = load_state(tmp_path / "resume.pt", "settings")
    assert status == "resumable"
    resumed.restore(saved, SINGLE)
    assert (resumed.step, resumed.position, len(resumed.history)) == (3, 24, 3)
    run(resumed, range(3, 6))
    for a, b in zip(reference.model.state_dict().values(), resumed.model.state_dict().values()):
        assert torch.equal(a, b)
    assert resumed.learning_rate == reference.learning_rate


def test_a_state_from_other_settings_is_foreign_and_a_broken_file_is_set_aside_not_deleted(tmp_path):
    path = tmp_path / "resume.pt"
    save_state(small_state(), path, "settings A", SINGLE)
    saved, status = load_state(path, "settings A")
    assert saved["step"] == 0 and status == "resumable"
    assert load_state(path, "settings B") == (None, "foreign")
    torch.save([1, 2], path)
    assert load_state(path, "settings A") == (None, "foreign")
    assert load_state(tmp_path / "missing.pt", "settings A") == (None, "absent")
    complete = path.read_bytes()
    path.write_bytes(complete[: len(complete) // 2])  # a torn write
    assert load_state(path, "settings A") == (None, "unreadable")
    assert not path.exists()
    (aside,) = tmp_path.glob("resume.pt.unreadable-*")
    assert aside.read_bytes() == complete[: len(complete) // 2]


def test_an_io_error_reading_the_state_stops_the_run_and_keeps_the_file(tmp_path):
    """A real I/O error from the kernel: /proc/self/mem is a regular file whose first page is unmapped (EIO)."""
    path = tmp_path / "resume.pt"
    path.symlink_to("/proc/self/mem")
    with pytest.raises(UserError, match=r"could not read the resume state .*Input/output error.*kept as it is"):
        load_state(path, "settings")
    assert path.is_symlink() and not list(tmp_path.glob("*.unreadable-*"))


def test_a_non_finite_loss_stops_before_the_update_and_names_the_knob():
    state = small_state()
    state.label, state.knobs = "fine-tune demo", "finetune.lr"
    before = {name: tensor.clone() for name, tensor in state.model.state_dict().items()}

    def nan_loss():
        return (state.model(torch.ones(2, 6)).sum() * float("nan"),)

    with pytest.raises(Diverged, match=r"fine-tune demo: training diverged at update 1 \(loss nan.*Lower finetune.lr"):
        state.update([nan_loss], grad_clip=1.0)
    assert state.step == 0
    for name, tensor in state.model.state_dict().items():
        assert torch.equal(tensor, before[name])


def test_one_device_resolver_names_the_setting_it_refuses():
    assert precision.resolve_device("cpu") == torch.device("cpu")
    assert precision.resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(UserError, match="finetune.device is 'tpu'; use auto, cpu or cuda"):
        precision.resolve_device("tpu", key="finetune.device")
    if not torch.cuda.is_available():
        with pytest.raises(UserError, match="pretrain.device is 'cuda' but no CUDA device is visible"):
            precision.resolve_device("cuda", key="pretrain.device")


@pytest.mark.parametrize("section", ["pretrain", "finetune"])
@pytest.mark.parametrize("key, value", [("betas", [0.9, 1.0]), ("betas", [-0.1, 0.999]), ("eps", float("inf")),
                                        ("eps", 0.0)])
def test_adam_settings_outside_their_range_stop_at_validation(section, key, value):
    raw = tiny_raw_params()
    raw[section][key] = value
    with pytest.raises(UserError, match=f"{section}.{key}"):
        parse_params(raw)


@pytest.fixture
def torch_determinism():
    """precision.deterministic sets process-wide torch flags: put them back for the tests that follow."""
    was = (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled(),
           torch.utils.deterministic.fill_uninitialized_memory, torch.backends.cudnn.benchmark)
    yield
    torch.use_deterministic_algorithms(was[0], warn_only=was[1])
    torch.utils.deterministic.fill_uninitialized_memory = was[2]
    torch.backends.cudnn.benchmark = was[3]


def test_cuda_runs_ask_for_deterministic_kernels(monkeypatch, torch_determinism):
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    was = torch.are_deterministic_algorithms_enabled()
    precision.deterministic(torch.device("cpu"))
    assert not torch.are_deterministic_algorithms_enabled() or was
    precision.deterministic(torch.device("cuda", 0))  # a device object; no GPU needed to set the flags
    assert torch.are_deterministic_algorithms_enabled() and torch.is_deterministic_algorithms_warn_only_enabled()
    import os
    assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"


def test_deterministic_mode_does_not_fill_fresh_memory_with_nan(torch_determinism):
    """The NaN fill exposes reads of uninitialised memory, which our kernels never make: it only costs time."""
    torch.utils.deterministic.fill_uninitialized_memory = True  # torch's default
    precision.deterministic(torch.device("cuda", 0))
    assert torch.are_deterministic_algorithms_enabled()
    assert torch.utils.deterministic.fill_uninitialized_memory is False


def test_the_chosen_device_is_announced_with_its_precision_and_why(caplog):
    caplog.set_level(logging.INFO, logger="gpt1.train.precision")
    chosen = precision.announce(precision.resolve_device("auto"), "float32", "auto", key="finetune.device")
    assert caplog.messages == [f"running on {chosen['device']} in fp32: {chosen['reason']}"]
    if not torch.cuda.is_available():
        assert chosen["device"] == "cpu" and chosen["precision"] == "fp32"
        built = "torch built without CUDA" if torch.version.cuda is None else f"torch built with CUDA {torch.version.cuda}"
        assert chosen["reason"] == f"finetune.device is auto and no CUDA device is visible ({built})"
    assert precision.announce(torch.device("cpu"), "bfloat16", "cpu", key="pretrain.device") == {
        "device": "cpu", "precision": "bf16 autocast", "reason": "pretrain.device is cpu"}
