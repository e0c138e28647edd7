"""params.yaml validation: one line naming the dotted key, from the library, the CLI and Snakemake alike."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from gpt1.data import registry
from gpt1.params.schema import Params, load_params, parse_params
from gpt1.errors import UserError
from gpt1.params.schedule import log_spaced_updates

REPO = Path(__file__).resolve().parents[1]
PARAMS_YAML = REPO / "params.yaml"
SNAKEMAKE = REPO / ".venv" / "bin" / "snakemake"


@pytest.fixture(scope="module")
def raw() -> dict:
    return yaml.safe_load(PARAMS_YAML.read_text())


def edited(raw: dict, dotted: str, value=None, delete: bool = False) -> dict:
    """A deep copy of `raw` with `dotted` (e.g. "bpe.merges") set to `value`, or deleted."""
    result = copy.deepcopy(raw)
    *parents, leaf = dotted.split(".")
    node = result
    for part in parents:
        node = node[part]
    if delete:
        del node[leaf]
    else:
        node[leaf] = value
    return result


def write_params(path: Path, params: dict) -> Path:
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    return path


# --- the repository's file -------------------------------------------------------------------------


def test_the_repositorys_params_yaml_loads(raw):
    params = load_params(PARAMS_YAML)
    assert isinstance(params, Params)
    assert params.bpe.merges == raw["bpe"]["merges"]
    assert params.data.tasks == raw["data"]["tasks"]
    assert params.pretrain.transformer.max_lr == raw["pretrain"]["transformer"]["max_lr"]
    assert params.pretrain.betas == tuple(raw["pretrain"]["betas"])
    assert params.model.d_model % params.model.n_head == 0


def test_params_are_frozen():
    params = load_params(PARAMS_YAML)
    with pytest.raises(ValidationError, match="frozen"):
        params.bpe.merges = 3  # type: ignore[misc]


# --- bad files: one line naming the key ------------------------------------------------------------

# (edit, value or DELETE, texts the message must contain)
DELETE = object()
BAD = {
    "unknown_top_level": ("bogus", 1, ["unknown key 'bogus'"]),
    "misspelt_nested": ("bpe.mergs", 40000, ["unknown key 'bpe.mergs'"]),
    "misspelt_deep": ("pretrain.transformer.max_lrr", 1e-3, ["unknown key 'pretrain.transformer.max_lrr'"]),
    "wrong_type": ("bpe.merges", "many", ["'bpe.merges'", "'many'", "integer"]),
    "wrong_type_list": ("data.corpus", "shakespeare", ["'data.corpus'", "list"]),
    "zero_merges": ("bpe.merges", 0, ["'bpe.merges'", "greater than or equal to 1"]),
    "too_many_merges": ("bpe.merges", 10**6, ["'bpe.merges'", "less than or equal to 65000"]),
    "val_fraction": ("data.corpus_val_fraction", 0.9, ["'data.corpus_val_fraction'", "less than 0.5"]),
    "attn_dropout_one": ("model.attn_dropout", 1.0, ["'model.attn_dropout'", "less than 1"]),
    "negative_seed": ("seed", -1, ["'seed'", "greater than or equal to 0"]),
    "bad_choice": ("pretrain.device", "tpu", ["'pretrain.device'", "'auto'", "'cpu'", "'cuda'"]),
    "unknown_task": ("data.tasks", ["rt_polarity", "glue_sts"],
                     ["'data.tasks'", "unknown name 'glue_sts'", "allowed:", "rt_polarity", "social_iqa"]),
    "unknown_corpus": ("data.corpus", ["shakespeare", "wikipedia"],
                       ["'data.corpus'", "unknown name 'wikipedia'", "allowed:", "bbc_news"]),
    "repeated_task": ("data.tasks", ["rt_polarity", "rt_polarity"], ["'data.tasks'", "must not repeat"]),
    "missing_leaf": ("bpe.merges", DELETE, ["missing key 'bpe.merges'"]),
    "missing_section": ("model", DELETE, ["missing key 'model'"]),
    "missing_deep": ("pretrain.lstm.max_lr", DELETE, ["missing key 'pretrain.lstm.max_lr'"]),
    "mirror_unknown": ("data.mirrors", {"glue": {"url": "https://x/y.zip", "sha256": "0" * 64}},
                       ["'data.mirrors'", "'glue' is not a downloaded source", "glue_cola"]),
    "mirror_local": ("data.mirrors", {"books": {"url": "https://x/y.zip", "sha256": "0" * 64}},
                     ["'books' is not a downloaded source"]),
    "mirror_sha": ("data.mirrors", {"glue_cola": {"url": "https://x/y.zip", "sha256": "abc"}},
                   ["'data.mirrors.glue_cola.sha256'"]),
    "mirror_url": ("data.mirrors", {"glue_cola": {"url": "x/y.zip", "sha256": "0" * 64}},
                   ["'data.mirrors.glue_cola.url'"]),
    "local_path_misspelt": ("data.local_paths", {"bookz": "/data/books"},
                            ["'data.local_paths'", "'bookz' is not data you register by hand", "books, story_cloze"]),
    "boolean_seed": ("seed", True, ["'seed'", "valid integer"]),
    "repeated_seed": ("finetune.seeds", [1, 2, 1], ["'finetune.seeds'", "lists [1] more than once"]),
    "beta_one": ("pretrain.betas", [0.9, 1.0], ["'pretrain.betas.1'", "less than 1"]),
    "finetune_beta_negative": ("finetune.betas", [-0.1, 0.999], ["'finetune.betas.0'", "greater than or equal to 0"]),
    "eps_infinite": ("pretrain.eps", float("inf"), ["'pretrain.eps'", "finite"]),
    "regression_layer_transfer": ("analysis.layer_transfer_tasks", ["sts_b"],
                                  ["analysis.layer_transfer_tasks", "'sts_b' is a regression task"]),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_params_raise_one_line_naming_the_key(case, raw, tmp_path):
    key, value, expected = BAD[case]
    path = write_params(tmp_path / "bad.yaml", edited(raw, key, value, delete=value is DELETE))
    with pytest.raises(UserError) as error:
        load_params(path)
    message = str(error.value)
    assert "\n" not in message, message
    assert message.startswith(f"{path}: "), message  # names the file it read
    for text in expected:
        assert text in message, (text, message)


def test_heads_that_do_not_divide_the_width_are_refused(raw):
    with pytest.raises(UserError) as error:
        parse_params(edited(raw, "model.n_head", 3), "p")  # d_model 128
    assert "'model.n_head'" in str(error.value) and "must divide model.d_model (128)" in str(error.value)


def test_every_allowed_task_is_listed_for_an_unknown_one(raw):
    with pytest.raises(UserError) as error:
        parse_params(edited(raw, "data.tasks", ["nope"]), "p")
    allowed = str(error.value).split("allowed: ", 1)[1].split(", ")
    assert allowed == sorted(registry.TASKS)


def test_a_known_paper_task_is_accepted(raw):
    paper = next(name for name in registry.TASKS if name not in raw["data"]["tasks"])
    params = parse_params(edited(raw, "data.tasks", [*raw["data"]["tasks"], paper]))
    assert paper in params.data.tasks


# --- a task scored with another task's model (mnli_mm with mnli's) has no job: it comes with that task -----------

def test_a_task_scored_with_another_tasks_model_comes_with_that_task(raw):
    tasks = raw["data"]["tasks"]
    with pytest.raises(UserError) as error:
        parse_params(edited(raw, "data.tasks", [*tasks, "mnli", "mnli_mm"]), "p")
    message = str(error.value)
    assert "\n" not in message and "'mnli_mm' is scored with mnli's fine-tuned models and comes with mnli" in message
    params = parse_params(edited(raw, "data.tasks", [*tasks, "mnli"]))
    assert params.data.tasks[-1] == "mnli" and params.data.scored_tasks[-2:] == ["mnli", "mnli_mm"]
    assert params.data.scored_with("mnli") == ["mnli_mm"] and params.data.model_of("mnli_mm") == "mnli"


@pytest.mark.parametrize("key", ["layer_transfer_tasks", "transfer_curve_tasks"])
def test_the_one_task_analyses_refuse_a_task_that_trains_no_model(key, raw):
    both = edited(raw, "data.tasks", [*raw["data"]["tasks"], "mnli"])
    with pytest.raises(UserError) as error:
        parse_params(edited(both, f"analysis.{key}", ["mnli_mm"]), "p")
    message = str(error.value)
    assert "\n" not in message and f"analysis.{key}: 'mnli_mm' trains no model of its own" in message
    assert "name mnli instead" in message


# --- Figure 2 (left) reuses the finetune stage's full runs for k = model.n_layer ---------------------------

def test_layer_transfer_refuses_all_layers_and_points_to_the_full_run(raw):
    depth = raw["model"]["n_layer"]
    with pytest.raises(UserError) as error:
        parse_params(edited(raw, "analysis.layer_transfer_layers", [0, depth]), "p")
    message = str(error.value)
    assert "\n" not in message and f"remove {depth} (model.n_layer)" in message
    assert "results/finetune/full/<task>/seed<s>" in message


def test_layer_transfer_refuses_depths_beyond_the_model(raw):
    depth = raw["model"]["n_layer"]
    with pytest.raises(UserError, match=rf"layer_transfer_layers: \[{depth + 1}, -1\] outside 0 \.\.\. {depth - 1}"):
        parse_params(edited(raw, "analysis.layer_transfer_layers", [0, depth + 1, -1]), "p")


def test_layer_transfer_seeds_must_be_finetune_seeds(raw):
    seeds = raw["finetune"]["seeds"]
    wanted = [seeds[0], max(seeds) + 1]
    with pytest.raises(UserError) as error:
        parse_params(edited(raw, "analysis.layer_transfer_seeds", wanted), "p")
    message = str(error.value)
    assert "\n" not in message
    assert f"analysis.layer_transfer_seeds {wanted} must be among finetune.seeds {seeds}" in message


def test_layer_transfer_needs_the_full_method(raw):
    with pytest.raises(UserError, match="finetune.methods must include full"):
        parse_params(edited(raw, "finetune.methods", ["no_pretrain", "lstm"]), "p")


# --- transfer over pretraining starts from checkpoints pretraining keeps ---------------------------------------

def test_transfer_curve_steps_must_be_kept_checkpoints_below_the_last_update(raw):
    pretrain = raw["pretrain"]
    kept = log_spaced_updates(pretrain["max_steps"], pretrain["checkpoints"])
    for wanted in ([kept[1], kept[1] + 1], [kept[-1]]):  # not kept; the last update (the finetune stage's full run)
        with pytest.raises(UserError) as error:
            parse_params(edited(raw, "analysis.transfer_curve_steps", wanted), "p")
        message = str(error.value)
        assert "\n" not in message and f"analysis.transfer_curve_steps: {wanted[-1:]} are not kept" in message
        assert f"choose among {kept[:-1]}" in message
    assert parse_params(edited(raw, "analysis.transfer_curve_steps", kept[:-1])).analysis.transfer_curve_steps == kept[:-1]


def test_transfer_curve_tasks_must_be_selected_and_listed_once(raw):
    with pytest.raises(UserError, match=r"transfer_curve_tasks: 'race' is not one of data.tasks"):
        parse_params(edited(raw, "analysis.transfer_curve_tasks", ["race"]), "p")
    task = raw["data"]["tasks"][0]
    with pytest.raises(UserError, match=rf"lists \['{task}'\] more than once"):
        parse_params(edited(raw, "analysis.transfer_curve_tasks", [task, task]), "p")


def test_released_weights_used_as_they_are_leave_the_curve_to_its_stage(raw):
    """No pretraining here keeps no checkpoints: every other stage still validates and runs; the transfer_curve
    stage itself says why it cannot (tests/test_finetune.py)."""
    edited_raw = edited(edited(raw, "pretrain.max_steps", 0), "pretrain.init_from", "/weights/gpt1")
    edited_raw["pretrain"]["lstm"]["max_steps"] = 100
    params = parse_params(edited_raw)
    assert params.analysis.transfer_curve_steps == raw["analysis"]["transfer_curve_steps"]


@pytest.mark.parametrize("text, expected", [
    ("", "expected a mapping"), ("- 1\n- 2\n", "expected a mapping"),
])
def test_a_file_that_is_not_a_mapping(text, expected, tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text(text)
    with pytest.raises(UserError, match=expected):
        load_params(path)


def test_a_missing_file_says_how_to_fix_it(tmp_path):
    with pytest.raises(UserError, match="--params"):
        load_params(tmp_path / "absent.yaml")


# --- the command line ------------------------------------------------------------------------------


def run_cli(params: Path, cwd: Path, stage: str = "bpe") -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "gpt1.cli", "--params", str(params), stage],
                          capture_output=True, text=True, cwd=cwd, env=env, timeout=120)


@pytest.mark.parametrize("key, value, named", [
    ("bpe.mergs", 3, "bpe.mergs"), ("bpe.merges", 0, "bpe.merges"),
    ("data.tasks", ["no_such_task"], "data.tasks"),
])
def test_cli_prints_one_error_line_and_exits_2(key, value, named, raw, tmp_path):
    bad = write_params(tmp_path / "bad.yaml", edited(raw, key, value))
    result = run_cli(bad, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("gpt1 bpe: error:") and f"'{named}'" in lines[0]
    assert "Traceback" not in result.stderr + result.stdout
    assert result.stdout == ""
    assert not (tmp_path / "logs").exists()  # validation comes first: no log of the last run is truncated


def test_cli_invalid_yaml_is_one_line_too(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("seed: [1\nbpe: {merges: 3}\n")
    result = run_cli(bad, cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert len(result.stderr.splitlines()) == 1, result.stderr


# --- Snakemake validates the same file -------------------------------------------------------------


def dry_run(configfile: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(SNAKEMAKE), "-n", "--cores", "1", "--configfile", str(configfile)],
                          capture_output=True, text=True, cwd=REPO, timeout=300)


needs_snakemake = pytest.mark.skipif(not SNAKEMAKE.exists(), reason="no snakemake in the project's venv")


@needs_snakemake
def test_snakemake_dry_run_accepts_the_good_file(raw, tmp_path):
    result = dry_run(write_params(tmp_path / "good.yaml", raw))
    assert result.returncode == 0, result.stdout + result.stderr


@needs_snakemake
@pytest.mark.parametrize("key", ["bogus_knob", "bpe.mergs"])
def test_snakemake_refuses_an_unknown_key(key, raw, tmp_path):
    result = dry_run(write_params(tmp_path / "bad.yaml", edited(raw, key, 7)))
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert f"unknown key '{key}'" in output, output


@pytest.mark.parametrize("methods, message", [
    (["full", "bigger"], "p: finetune.methods names bigger, which the methods section has no entry for: add one, or "
                         "use one of full, no_pretrain, no_aux_lm, lstm"),
    (["full", "full"], r"p: bad value for 'finetune.methods' \(\['full', 'full'\]\): lists \['full'\] more than once")])
def test_finetune_methods_must_be_entries_of_the_methods_section_named_once(raw, methods, message):
    with pytest.raises(UserError, match=message):
        parse_params(edited(raw, "finetune.methods", methods), "p")


def test_a_methods_entry_is_validated_and_full_is_required(raw):
    """A method is data: its entry is checked as every section is, and full, which Table 5 compares every other method
    with, must be there; the former key of its rate names the new one."""
    bad = {**raw, "methods": {**raw["methods"], "no_pretrain": {**raw["methods"]["no_pretrain"], "lr": 2}}}
    with pytest.raises(UserError, match=r"p: bad value for 'methods.no_pretrain.lr' \(2\): Input should be less than 1"):
        parse_params(bad, "p")
    bad = {**raw, "methods": {**raw["methods"], "no_pretrain": {**raw["methods"]["no_pretrain"], "starts_from": "rnn"}}}
    with pytest.raises(UserError, match=r"bad value for 'methods.no_pretrain.starts_from' \('rnn'\)"):
        parse_params(bad, "p")
    missing = {**raw, "methods": {name: entry for name, entry in raw["methods"].items() if name != "full"}}
    with pytest.raises(UserError, match="p: the methods section has no entry full: Table 5 compares every other method "
                                        "with it"):
        parse_params(missing, "p")
    with pytest.raises(UserError, match=r"p: methods: rename 'no-pretrain' with letters, digits and _ only"):
        parse_params({**raw, "methods": {**raw["methods"], "no-pretrain": raw["methods"]["no_pretrain"]}}, "p")
    with pytest.raises(UserError, match="p: 'finetune.no_pretrain_lr' is now called 'methods.no_pretrain.lr'; rename "
                                        "the key"):
        parse_params({**raw, "finetune": {**raw["finetune"], "no_pretrain_lr": 1e-3}}, "p")


def test_the_methods_older_key_gets_one_line_naming_the_new_one(raw):
    """A params.yaml written before `finetune.variants` became `finetune.methods` is told the new name, not just
    "unknown key"."""
    older = edited(raw, "finetune.variants", raw["finetune"]["methods"])
    older = edited(older, "finetune.methods", delete=True)
    with pytest.raises(UserError) as error:
        parse_params(older, "params.yaml")
    assert str(error.value) == "params.yaml: 'finetune.variants' is now called 'finetune.methods'; rename the key"
