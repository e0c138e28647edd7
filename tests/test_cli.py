"""The command line: stage errors are one line, import-weights writes a loadable checkpoint, a tool is a module and a
row of gpt1/commands/tool_table.py, and building the parser loads no torch."""

import importlib
import inspect
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from gpt1.cli import main

ROOT = Path(__file__).resolve().parents[1]


def gpt1(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "gpt1.cli", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True)


def test_import_weights_from_an_hf_folder(tmp_path):
    transformers = __import__("pytest").importorskip("transformers")
    config = transformers.OpenAIGPTConfig(vocab_size=50, n_positions=16, n_embd=32, n_layer=2, n_head=4)
    reference = transformers.OpenAIGPTLMHeadModel(config).eval()
    reference.save_pretrained(tmp_path / "released")
    result = gpt1("import-weights", tmp_path / "released", "--out", tmp_path / "model.safetensors")
    assert result.returncode == 0, result.stderr

    from gpt1 import load_model

    ours = load_model(tmp_path / "model.safetensors")
    ids = torch.randint(0, 50, (2, 16))
    with torch.no_grad():
        assert torch.allclose(ours(ids), reference(ids).logits, atol=1e-4)


def test_import_weights_names_an_unknown_folder(tmp_path):
    result = gpt1("import-weights", tmp_path, "--out", tmp_path / "x.safetensors")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"gpt1 import-weights: error: {tmp_path}: neither an HF folder (config.json) nor OpenAI's release "
        "(params_shapes.json)"]
    assert not (tmp_path / "x.safetensors").exists()


def test_a_stage_job_runs_everything_a_one_off_names_one_run_and_each_logs_apart():
    """The DAG runs one process per (method, task) (finetune) or per task (layer-transfer, transfer-curve), one log
    per job; `--seed` (with the run's own option where a job's runs differ by more than the seed) is a one-off with
    its own log, and either half alone is a clear error."""
    from gpt1.cli import build_parser, log_path
    from gpt1.errors import UserError
    from gpt1.pipeline.one_off import one_off

    parser = build_parser()
    every = parser.parse_args(["finetune", "--method", "full", "--task", "rt_polarity"])
    one = parser.parse_args(["finetune", "--task", "rt_polarity", "--method", "full", "--seed", "7"])
    assert not one_off(every) and one_off(one)
    assert log_path(every) == Path("logs/finetune/full/rt_polarity.log")
    assert log_path(one) == Path("logs/finetune/full/rt_polarity/seed7.log")
    layers = parser.parse_args(["layer-transfer", "--task", "social_iqa"])
    assert not one_off(layers) and log_path(layers) == Path("logs/layer_transfer/social_iqa.log")
    layers = parser.parse_args(["layer-transfer", "--task", "social_iqa", "--layers", "2", "--seed", "1"])
    assert one_off(layers) and log_path(layers) == Path("logs/layer_transfer/social_iqa/layers2/seed1.log")
    with pytest.raises(UserError, match="--seed and --layers go together"):
        one_off(parser.parse_args(["layer-transfer", "--task", "social_iqa", "--layers", "2"]))
    curve = parser.parse_args(["transfer-curve", "--task", "snli_100k"])
    assert not one_off(curve) and log_path(curve) == Path("logs/transfer_curve/snli_100k.log")
    curve = parser.parse_args(["transfer-curve", "--task", "snli_100k", "--step", "305", "--seed", "2"])
    assert one_off(curve) and log_path(curve) == Path("logs/transfer_curve/snli_100k/step305/seed2.log")
    with pytest.raises(UserError, match="--seed and --step go together"):
        one_off(parser.parse_args(["transfer-curve", "--task", "snli_100k", "--seed", "2"]))


@pytest.mark.parametrize("stage, option, older, value, rest, log", [
    ("finetune", "--method", "--variant", "full", ["--task", "sts_b"], "finetune/full/sts_b.log"),
    ("starting-model", "--method", "--variant", "no_pretrain", [], "starting_model/no_pretrain.log"),
    ("pretrain", "--kind", "--model", "lstm", [], "pretrain/lstm.log")])
def test_one_word_per_option_and_the_older_names_are_gone(stage, option, older, value, rest, log, capsys):
    """A method is `--method` and a model kind `--kind` (`--model` names a checkpoint file, in generate and
    export-weights); the older spellings are refused rather than kept as second names."""
    from gpt1.cli import build_parser, log_path

    parser = build_parser()
    args = parser.parse_args([stage, option, value, *rest])
    assert getattr(args, option.removeprefix("--")) == value and log_path(args) == Path("logs") / log
    with pytest.raises(SystemExit):
        parser.parse_args([stage, older, value, *rest])
    assert f"the following arguments are required: {option}" in capsys.readouterr().err


@pytest.mark.parametrize("command, option", [(["transfer-curve", "--task", "snli_100k", "--seed", "7"], "step"),
                                             (["layer-transfer", "--task", "snli_100k", "--layers", "1"], "layers")])
def test_a_half_given_one_off_stops_before_it_writes_a_log(tmp_path, command, option):
    """The log's path names both halves of a one-off (logs/layer_transfer/<task>/layers1/seed7.log): with one missing,
    the command stops with the one error line and leaves no log (nor its folders) behind."""
    (tmp_path / "params.yaml").write_text((ROOT / "params.yaml").read_text())
    result = gpt1(*command, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"gpt1 {command[0]}: error: --seed and --{option} go together: a one-off run of one seed, into "
        f"results/one-off; leave both out for the stage's own job (every {option} and seed that params.yaml lists)"]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["params.yaml"]


def jobs_without_training(monkeypatch, tmp_path, run_seeds, check=lambda *given: None):
    """The CLI's parser and the default params, with the fine-tuning library's `run_seeds` and the starting-weights
    `check` replaced, task tokens loaded as their folder's path, and the jobs' state folders under `tmp_path`."""
    import gpt1.train.finetune as library
    import gpt1.train.starting_weights as starting_weights
    from gpt1.cli import build_parser
    from gpt1.model.task_tokens import TaskTokens
    from gpt1.params.schema import load_params

    monkeypatch.setattr(library, "run_seeds", run_seeds)
    monkeypatch.setattr(TaskTokens, "load", lambda folder: folder)  # each run reads its own task's tokens
    monkeypatch.setattr(starting_weights, "check", check)
    monkeypatch.chdir(tmp_path)  # the jobs' state folders go under data/training_state: not the checkout's
    return build_parser(), load_params(Path(__file__).resolve().parents[1] / "params.yaml")


def test_a_one_off_seed_writes_outside_the_stage_output_folder(monkeypatch, tmp_path):
    """DVC owns results/finetune/<method>/<task> and results/layer_transfer/<task>...: a one-off `--seed` must not add a
    folder there (the next `dvc repro` would see the stage as changed). A stage's job runs every task (finetune), k
    or checkpoint (the other two) that params lists, each with every seed of finetune.seeds."""
    from gpt1.stages import finetune, layer_transfer, transfer_curve

    calls, checked = [], []
    parser, params = jobs_without_training(
        monkeypatch, tmp_path, lambda params, tokens, method, seeds, **options: calls.append(
            (tokens, seeds, options.get("out_root"))),
        check=lambda method, *folders: checked.append((method, *folders)))
    for task in params.data.tasks:
        finetune.main(parser.parse_args(["finetune", "--method", "full", "--task", task]), params)
    assert calls == [(Path("data/task_tokens") / task, [1, 2, 3], Path("results/finetune/full") / task)
                     for task in params.data.tasks]
    calls.clear()
    finetune.main(parser.parse_args(["finetune", "--task", "sts_b", "--method", "full", "--seed", "7"]), params)
    layer_transfer.main(parser.parse_args(["layer-transfer", "--task", "snli_100k"]), params)
    layer_transfer.main(parser.parse_args(["layer-transfer", "--task", "snli_100k", "--layers", "1", "--seed", "7"]),
                        params)
    transfer_curve.main(parser.parse_args(["transfer-curve", "--task", "rt_polarity"]), params)
    transfer_curve.main(parser.parse_args(["transfer-curve", "--task", "rt_polarity", "--step", "305", "--seed", "7"]),
                        params)
    sts, snli, rt = (Path("data/task_tokens") / task for task in ("sts_b", "snli_100k", "rt_polarity"))
    assert calls == [(sts, [7], Path("results/one-off/finetune/full/sts_b")),
                     *[(snli, [1, 2], Path(f"results/layer_transfer/snli_100k/layers{k}"))
                       for k in params.analysis.layer_transfer_layers],
                     (snli, [7], Path("results/one-off/layer_transfer/snli_100k/layers1")),
                     *[(rt, [1, 2], Path(f"results/transfer_curve/rt_polarity/step{step}"))
                       for step in params.analysis.transfer_curve_steps],
                     (rt, [7], Path("results/one-off/transfer_curve/rt_polarity/step305"))]
    # each job of the stage checks the record of its starting weights, which DVC tracks; a one-off run has none
    assert checked == [("full", "transformer", Path("data/pretrain"), Path("data/starting_models"))] * len(
        params.data.tasks)


def test_each_run_s_model_card_names_the_one_off_command_the_cli_takes(monkeypatch, tmp_path):
    """A stage's job hands each run the command that runs it alone, spelled by the stage table (its job's options in
    the row's order, its one-off option, --seed): the CLI parses it back into a one-off run of that very run."""
    from gpt1.layout import ONE_OFF
    from gpt1.pipeline.one_off import one_off
    from gpt1.pipeline.stage_table import STAGES
    from gpt1.stages import finetune, layer_transfer, transfer_curve

    spelled = []
    parser, params = jobs_without_training(
        monkeypatch, tmp_path, lambda *given, **options: spelled.append(options["reproduce"](7)))
    analysis = params.analysis
    finetune.main(parser.parse_args(["finetune", "--method", "lstm", "--task", "sts_b"]), params)
    layer_transfer.main(parser.parse_args(["layer-transfer", "--task", analysis.layer_transfer_tasks[0]]), params)
    transfer_curve.main(parser.parse_args(["transfer-curve", "--task", analysis.transfer_curve_tasks[0]]), params)
    finetune.main(parser.parse_args(["--params", "mine.yaml", "--profile", "profiles/trial.yaml", "finetune",
                                     "--method", "full", "--task", "sts_b"]), params)
    assert spelled == ["gpt1 finetune --method lstm --task sts_b --seed 7",
                       *(f"gpt1 layer-transfer --task {analysis.layer_transfer_tasks[0]} --layers {k} --seed 7"
                         for k in analysis.layer_transfer_layers),
                       *(f"gpt1 transfer-curve --task {analysis.transfer_curve_tasks[0]} --step {step} --seed 7"
                         for step in analysis.transfer_curve_steps),
                       "gpt1 --params mine.yaml --profile profiles/trial.yaml finetune --method full --task sts_b "
                       "--seed 7"]
    for command in spelled:
        args = parser.parse_args(command.split()[1:])
        assert one_off(args) and args.seed == 7
        given = vars(args)
        run = STAGES[args.stage].one_off.run(given)
        assert run.is_relative_to(ONE_OFF) and run.name == "seed7" and given["task"] in run.parts
        assert args.one_off_command(given) == command  # spelled again from the parsed options: the same line


def test_the_transfer_curve_stage_says_why_it_cannot_run_on_released_weights_used_as_they_are():
    from gpt1.cli import build_parser
    from gpt1.params.schema import parse_params
    from gpt1.errors import UserError
    from gpt1.stages import transfer_curve
    from tiny import tiny_raw_params

    raw = tiny_raw_params(pretrain={"max_steps": 0, "init_from": "/weights/gpt1"})
    raw["pretrain"]["lstm"]["max_steps"] = 6
    with pytest.raises(UserError, match=r"pretrain.max_steps is 0 \(released weights used as they are\)"):
        transfer_curve.main(build_parser().parse_args(["transfer-curve", "--task", "rt_polarity", "--step", "2",
                                                       "--seed", "1"]), parse_params(raw))


def test_the_help_lists_every_command(capsys):
    """A help text with a literal "%" once made `gpt1 --help` crash: argparse %-formats each command's help."""
    with pytest.raises(SystemExit) as stopped:
        main(["--help"])
    assert stopped.value.code == 0
    assert "compare" in capsys.readouterr().out


def test_building_the_parser_loads_no_torch():
    """Every tool's module is imported to read its options: the CLI stays cheap (`gpt1 download` never loads torch,
    which takes seconds) only while each keeps its heavy imports inside its `main`."""
    script = "import sys; from gpt1.cli import build_parser; build_parser(); print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "False"


def test_every_tool_is_a_module_of_gpt1_commands_with_its_options_and_a_main():
    from gpt1.commands.tool_table import TOOLS, tool_module_name
    from gpt1.pipeline.stage_table import STAGES

    assert not set(TOOLS) & set(STAGES)
    for command in TOOLS:
        module = importlib.import_module(tool_module_name(command))
        assert module.__name__.startswith("gpt1.commands."), command
        assert list(inspect.signature(module.main).parameters) == ["args", "params"], command
        assert list(inspect.signature(module.add_arguments).parameters) == ["parser"], command


def test_a_new_tool_is_a_module_and_a_table_row(tmp_path):
    """In a copy of the project, a tool added with only its module in gpt1/commands and its row in
    gpt1/commands/tool_table.py is listed by `gpt1 --help`, takes its options, gets the params and writes its log. Its
    name is one no real command would take, so the copy gains a tool rather than replacing one."""
    shutil.copytree(ROOT / "gpt1", tmp_path / "gpt1", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "params.yaml", tmp_path / "params.yaml")
    (tmp_path / "gpt1/commands/example_tool.py").write_text(
        '"""`gpt1 example-tool`: the project seed, times --times."""\n\n'
        "import logging\n\n\n"
        "def add_arguments(parser) -> None:\n"
        "    parser.add_argument('--times', type=int, default=1, help='how many times the seed')\n\n\n"
        "def main(args, params) -> None:\n"
        "    logging.getLogger('gpt1.example_tool').info('multiplied')\n"
        "    print(params.seed * args.times)\n")
    table = tmp_path / "gpt1/commands/tool_table.py"
    header = next(line for line in table.read_text().splitlines(keepends=True) if line.startswith("TOOLS: "))
    table.write_text(table.read_text().replace(header, header + '    "example-tool": ToolSpec("print the seed"),\n'))
    environment = {**__import__("os").environ, "PYTHONPATH": str(tmp_path)}
    listed = subprocess.run([sys.executable, "-m", "gpt1.cli", "--help"], cwd=tmp_path, env=environment,
                            capture_output=True, text=True)
    assert listed.returncode == 0 and "example-tool" in listed.stdout and "print the seed" in listed.stdout
    run = subprocess.run([sys.executable, "-m", "gpt1.cli", "example-tool", "--times", "2"], cwd=tmp_path,
                         env=environment, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "2468"
    assert "multiplied" in (tmp_path / "logs/example-tool.log").read_text()
