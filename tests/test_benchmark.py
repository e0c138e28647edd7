"""`gpt1 benchmark`: which model it times (the named configs) and which peak its MFU is taken against."""

from __future__ import annotations

import json
import sys

import pytest
import torch

from gpt1.commands import benchmark
from gpt1.params.schema import parse_params
from gpt1.errors import UserError
from gpt1.model.lm import GPT1
from gpt1.train.flops import H100_BF16_DENSE_FLOPS, gpu_peak, measured_peak, model_flops_utilisation
from tiny import tiny_raw_params


def test_the_paper_config_is_gpt1s_size_and_reads_no_data_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no data/ at all
    params = parse_params(tiny_raw_params())
    config = benchmark.named_configs(["paper"], params.model)["paper"]
    assert (config.n_layer, config.d_model, config.n_head, config.d_ff, config.n_positions, config.vocab_size) == (
        12, 768, 12, 3072, 512, 40478)
    with torch.device("meta"):  # counted, not allocated
        assert GPT1(config).num_parameters() == 116_534_784  # transformers' openai-gpt; the paper's "117M"
    # A tokenized corpus changes default's vocabulary, never paper's.
    (tmp_path / "data/tokens").mkdir(parents=True)
    (tmp_path / "data/tokens/meta.json").write_text(json.dumps({"vocab_size": 123}))
    configs = benchmark.named_configs(["paper", "default", "mid"], params.model)
    assert configs["paper"] == config and configs["default"].vocab_size == configs["mid"].vocab_size == 123
    assert configs["default"].n_layer == params.model.n_layer and configs["mid"].n_layer == 6
    with pytest.raises(UserError, match="unknown benchmark config 'huge'; use default, mid, paper"):
        benchmark.named_configs(["huge"], params.model)


@pytest.mark.parametrize("device, expected", [("cpu", ["default", "mid"]), ("cuda", ["paper"])])
def test_with_no_config_named_a_gpu_times_the_paper_model(tmp_path, monkeypatch, device, expected):
    monkeypatch.chdir(tmp_path)
    timed = []
    monkeypatch.setattr(benchmark.precision, "resolve_device", lambda *args, **kwargs: torch.device(device))
    monkeypatch.setattr(benchmark, "run_benchmark",
                        lambda config, *args, **kwargs: timed.append(config) or {"cpu_capability": "-"})
    monkeypatch.setattr(benchmark, "format_result", lambda name, result: name)
    results = benchmark.main(parse_params(tiny_raw_params()), device=device)
    assert list(results) == expected and len(timed) == len(expected)


@pytest.mark.parametrize("name, precision, board, tflops", [
    ("NVIDIA H100 80GB HBM3", "bf16", "NVIDIA H100 SXM", 989),
    ("NVIDIA H100 80GB HBM3", "tf32", "NVIDIA H100 SXM", 494.5),
    ("NVIDIA H100 80GB HBM3", "fp32", "NVIDIA H100 SXM", 67),
    ("NVIDIA H200", "bf16", "NVIDIA H200 SXM", 989),
    ("NVIDIA H100 PCIe", "bf16", "NVIDIA H100 PCIe", 756.5),
    ("NVIDIA A100-SXM4-80GB", "bf16", "NVIDIA A100", 312),
    ("NVIDIA A100 80GB PCIe", "tf32", "NVIDIA A100", 156),
])
def test_a_known_gpu_gets_its_data_sheet_peak(name, precision, board, tflops):
    peak = gpu_peak(name, precision)
    assert peak.flops == pytest.approx(tflops * 1e12) and peak.name == f"{board} dense {precision}"


@pytest.mark.parametrize("name", ["NVIDIA GeForce RTX 4090", "NVIDIA H100 NVL", "NVIDIA H200 NVL", "AMD Instinct MI300X"])
def test_an_unknown_gpu_gets_no_peak(name):
    assert gpu_peak(name, "bf16") is None


def test_a_cpus_peak_is_its_own_measured_matmul_and_the_pretraining_default_stays_the_h100():
    peak = benchmark.device_peak(torch.device("cpu"), bf16=False, matmul_size=2048, matmul_flops=1.5e11)
    assert peak == measured_peak(2048, 1.5e11, "fp32") and peak.flops == 1.5e11 and "2048³ fp32" in peak.name
    assert benchmark.device_peak(torch.device("cpu"), True, 2048, 3e11).name.endswith("bf16 matmul")
    # gpt1/train/pretrain.py's call, with the default peak
    assert H100_BF16_DENSE_FLOPS == 989e12 and model_flops_utilisation(1e12, 989.0) == pytest.approx(1.0)
    assert model_flops_utilisation(1e3, 1e8, peak_flops=1e12) == pytest.approx(0.1)


def test_one_tiny_run_reports_the_peak_it_used_in_the_line_and_the_json(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(benchmark, "matmul_throughput", lambda device, dtype: (2048, 2e11))  # not timed here
    output = tmp_path / "bench.json"
    params = parse_params(tiny_raw_params(model={"d_ff": 128}))  # the reference needs d_ff = 4 d_model
    results = benchmark.main(params, configs=["default"], batch=2, steps=1, warmup=1,
                             rounds=1, device="cpu", vocab_size=50, output=output, dtype="float32")
    result = results["default"]
    assert result["peak"] == {"name": "this machine's measured 2048³ fp32 matmul", "tflops": 0.2}
    for name in ("gpt1", "transformers"):
        assert result[name]["mfu"] == pytest.approx(result[name]["fraction_of_matmul"])
    assert json.loads(output.read_text())["default"]["peak"] == result["peak"]
    assert "of this machine's measured 2048³ fp32 matmul (0.2 TFLOP/s)" in capsys.readouterr().out
    unknown = {**result, "peak": None, "device_name": "NVIDIA GeForce RTX 4090"}
    assert benchmark.format_result("default", unknown).endswith("; MFU unknown (no known peak for NVIDIA GeForce RTX 4090)")


def test_the_command_line_offers_every_named_config():
    from gpt1.commands.benchmark import CONFIG_NAMES
    from gpt1.cli import build_parser

    benchmark = build_parser()._subparsers._group_actions[0].choices["benchmark"]
    configs = next(action for action in benchmark._actions if action.dest == "configs")
    assert tuple(configs.choices) == CONFIG_NAMES


def test_a_candidate_setting_times_our_model_alone_and_says_what_it_ran(tmp_path, monkeypatch, capsys):
    from gpt1.cli import build_parser

    monkeypatch.setattr(benchmark, "matmul_throughput", lambda device, dtype: (2048, 2e11))
    params = parse_params(tiny_raw_params())
    results = benchmark.main(params, configs=["default"], batch=2, steps=1, warmup=1, rounds=1, device="cpu",
                             vocab_size=50, dtype="float32", lm_loss="dense", reference=False)
    result = results["default"]
    assert "transformers" not in result and result["ratio"] is None and result["lm_loss"] == "dense"
    assert result["gpt1"]["tokens_per_second"] > 0
    line = capsys.readouterr().out.splitlines()[0]
    assert "fp32 eager, dense LM loss" in line and "transformers" not in line and "MFU gpt1" in line
    arguments = build_parser().parse_args(["benchmark", "--compile-mode", "reduce-overhead", "--lm-loss", "dense",
                                           "--no-reference"])
    assert (arguments.compile_mode, arguments.lm_loss, arguments.reference) == ("reduce-overhead", "dense", False)


def test_a_padded_output_layer_and_the_step_breakdown_are_reported(tmp_path, monkeypatch, capsys):
    from gpt1.cli import build_parser

    monkeypatch.setattr(benchmark, "matmul_throughput", lambda device, dtype: (2048, 2e11))
    params = parse_params(tiny_raw_params())
    result = benchmark.main(params, configs=["default"], batch=2, steps=1, warmup=1, rounds=1, device="cpu",
                            vocab_size=50, dtype="float32", reference=False, pad_vocab_to=64,
                            breakdown=True)["default"]
    assert result["output_rows"] == 64
    split = result["breakdown"]
    assert split["seconds"]["matrix products"] > 0 and split["seconds"]["optimizer"] > 0
    assert split["busy_seconds"] == pytest.approx(sum(split["seconds"].values()))
    assert split["device_idle_seconds"] is None  # a CPU is the device: there is nothing to wait on
    lines = capsys.readouterr().out.splitlines()
    assert "output layer padded to 64 rows" in lines[0] and "matrix products" in lines[1]
    # the wall time is the unprofiled step's (the profiler slows the host down)
    assert split["wall_seconds"] == pytest.approx(result["batch"] * result["seq"] / result["gpt1"]["tokens_per_second"])
    arguments = build_parser().parse_args(["benchmark", "--pad-vocab-to", "1", "--breakdown", "--bf16-layer-norm"])
    assert (arguments.pad_vocab_to, arguments.breakdown, arguments.bf16_layer_norm) == (1, True, True)


def test_bf16_layer_norm_outputs_are_a_setting_the_result_names(monkeypatch, capsys):
    monkeypatch.setattr(benchmark, "matmul_throughput", lambda device, dtype: (2048, 2e11))
    params = parse_params(tiny_raw_params())
    result = benchmark.main(params, configs=["default"], batch=2, steps=1, warmup=1, rounds=1, device="cpu",
                            vocab_size=50, dtype="bfloat16", reference=False, bf16_layer_norm=True)["default"]
    assert result["layer_norm_output"] == "bf16"
    assert "bf16 LayerNorm outputs" in capsys.readouterr().out


@pytest.mark.parametrize("kernel, expected", [
    ("nvjet_tst_192x192_64x4_2x1_v_bz_coopA_NNT", "matrix products"),
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", "matrix products"),
    ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128>>", "attention"),
    ("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<FusedAdamMathFunctor>", "optimizer"),
    ("Memcpy HtoD (Pageable -> Device)", "copies"),
    ("triton_per_fused_native_layer_norm_add_7", "elementwise and reductions"),
])
def test_kernels_are_sorted_into_the_categories_by_name(kernel, expected):
    from gpt1.commands.step_profile import category

    assert category(kernel) == expected


@pytest.mark.parametrize("option, value, message", [("pad_vocab_to", 0, "--pad-vocab-to 0: give a multiple of 1"),
                                                     ("dropout", 1.0, "--dropout 1.0: give a rate from 0")])
def test_a_padding_below_one_or_a_dropout_rate_outside_0_to_1_is_one_clear_error(option, value, message):
    params = parse_params(tiny_raw_params())
    with pytest.raises(UserError, match=message):
        benchmark.main(params, configs=["default"], device="cpu", vocab_size=50, **{option: value})


def test_the_reference_without_transformers_names_the_extra_and_the_way_round(monkeypatch):
    from gpt1.model.lm import TransformerConfig

    monkeypatch.setitem(sys.modules, "transformers", None)  # as where it is not installed: importing it fails
    with pytest.raises(UserError, match=r"pip install 'gpt1\[test\]'.*--no-reference"):
        benchmark.build_reference(TransformerConfig(vocab_size=16, n_positions=8, n_layer=1, n_head=1, d_model=8,
                                                    d_ff=16))
