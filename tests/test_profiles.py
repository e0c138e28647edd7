"""Profiles hold only what they change, compose over params.yaml, and apply through each tool's mechanism."""

import shutil
from pathlib import Path

import pytest
import yaml

from gpt1.params import profiles
from gpt1.params.schema import load_params
from gpt1.params.files import compose_raw, merge
from gpt1.errors import UserError

ROOT = Path(__file__).resolve().parents[1]
PARAMS = ROOT / "params.yaml"
PAPER, TINY = ROOT / "profiles" / "paper.yaml", ROOT / "profiles" / "tiny.yaml"


def test_default_params_and_every_profile_combination_validate():
    load_params(PARAMS)
    for combination in ([PAPER], [TINY], [PAPER, TINY]):
        load_params(PARAMS, combination)


def test_paper_profile_is_the_paper():
    paper = load_params(PARAMS, [PAPER])
    assert (paper.model.n_layer, paper.model.n_head, paper.model.d_model, paper.model.d_ff,
            paper.model.n_positions, paper.model.dropout) == (12, 12, 768, 3072, 512, 0.1)
    assert paper.bpe.merges == 40_000
    assert paper.pretrain.tokens_per_update == 64 * 512 and paper.pretrain.warmup_steps == 2000
    assert paper.pretrain.transformer.max_lr == 2.5e-4 and paper.pretrain.betas == (0.9, 0.999)
    assert (paper.finetune.lr, paper.finetune.batch_size, paper.finetune.epochs, paper.finetune.lm_coef) == (
        6.25e-5, 32, 3, 0.5)
    assert {"cola", "sst2", "mrpc", "stsb", "qqp", "mnli", "qnli", "rte", "snli", "scitail", "race",
            "story_cloze"} <= set(paper.data.tasks)
    assert (paper.lstm.n_layer, paper.lstm.d_hidden) == (1, 2048)


def _leaves(mapping: dict, prefix: str = ""):
    for key, value in mapping.items():
        if isinstance(value, dict) and value:
            yield from _leaves(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


@pytest.mark.parametrize("profile", [PAPER, TINY])
def test_a_profile_holds_only_what_differs_from_the_default(profile):
    """A key repeated with the default's value would hide a later change of the default. The one exception: a
    profile that gives pretrain.max_steps says epochs: null, so that it composes over the paper profile's epochs
    (the length is given once, gpt1/params/schema.py)."""
    base = dict(_leaves(yaml.safe_load(PARAMS.read_text())))
    leaves = dict(_leaves(yaml.safe_load(profile.read_text())))
    resets_epochs = leaves.get("pretrain.epochs", 0) is None and "pretrain.max_steps" in leaves
    length_reset = {"pretrain.epochs"} if resets_epochs else set()
    same = [key for key, value in leaves.items() if key in base and base[key] == value and key not in length_reset]
    assert not same, f"{profile.name} repeats the default for {same}"


def test_merge_replaces_lists_and_merges_mappings():
    assert merge({"a": {"x": 1, "y": [1, 2]}, "b": 2}, {"a": {"y": [3]}}) == {"a": {"x": 1, "y": [3]}, "b": 2}


def test_a_misspelt_profile_key_is_one_line_naming_the_files(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("model:\n  n_layers: 3\n")
    with pytest.raises(UserError, match=r"^\S*params.yaml \+ \S*bad.yaml: unknown key 'model.n_layers'"):
        load_params(PARAMS, [bad])
    bad.write_text("- a list\n")
    with pytest.raises(UserError, match="a profile is a mapping"):
        load_params(PARAMS, [bad])


@pytest.mark.parametrize("combination", [[PAPER], [TINY], [PAPER, TINY]])
def test_the_dvc_overrides_turn_params_yaml_into_the_composed_profile(combination, tmp_path):
    """What `dvc exp run` does with our -S arguments, by DVC's own code: the result is the composition."""
    from dvc.utils.hydra import apply_overrides

    command = profiles.dvc_exp_run_command(combination, PARAMS)
    assert command[:3] == ["dvc", "exp", "run"]
    shutil.copy(PARAMS, tmp_path / "params.yaml")
    apply_overrides(tmp_path / "params.yaml", [arg for arg in command[3:] if arg != "-S"])
    assert yaml.safe_load((tmp_path / "params.yaml").read_text()) == compose_raw(PARAMS, combination)[0]


def test_override_values_are_single_shell_words():
    assert profiles.hydra_value([0.9, 0.999]) == "[0.9,0.999]"
    assert profiles.hydra_value({"books": None, "dir": "/data/my books"}) == "{books:null,dir:'/data/my books'}"
    assert profiles.hydra_value("null") == "'null'" and profiles.hydra_value("cola") == "cola"
    with pytest.raises(UserError, match="finite"):
        profiles.hydra_value(float("inf"))


def test_layer_transfer_must_fit_the_model(tmp_path):
    deeper = tmp_path / "p.yaml"
    deeper.write_text(yaml.safe_dump({"analysis": {"layer_transfer_layers": [0, 5]}}))
    with pytest.raises(UserError, match=r"^\S+ \+ \S+: analysis.layer_transfer_layers: \[5\] outside 0 \.\.\. 3 "
                                         r"\(blocks kept, below model.n_layer"):
        load_params(PARAMS, [deeper])
