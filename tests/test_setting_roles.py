"""Each setting's role is declared once, beside its type in the schema (gpt1/params/roles.py), and everything that
lists settings reads it from there: dvc.yaml's params of each stage, the fine-tuning and pretraining resume
fingerprints, the model card. One test per role, driven from the schema, so a key added later is covered too; and a
setting added to the schema alone reaches all of them."""

from __future__ import annotations

import json
import typing
from pathlib import Path
from typing import Annotated

import pytest
import yaml
from pydantic import Field

from gpt1.methods import resolve
from gpt1.params.roles import declared, keys_with
from gpt1.params.schema import TRAINING, FinetuneParams, Params, load_params
from gpt1.pipeline.stage_table import STAGES, declared_params
from gpt1.train import finetune
from gpt1.train.model_card import card_settings
from gpt1.train.pretrain_settings import PretrainSettings, run_signature
from gpt1.train.model_configs import model_config
from gpt1.train.seed_state import SeedState
from test_finetune import one_thread, tiny_params, tokens_of, workspace  # noqa: F401 (fixtures)
from tiny import ROOT

RESUMED = lambda role: role.resume  # noqa: E731


def stage_params() -> dict[str, set[str]]:
    """{dvc.yaml stage: the params keys it lists}, from the committed dvc.yaml."""
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    return {name: {str(key) for key in body.get("do", body).get("params", [])} for name, body in stages.items()}




def with_value(section, name: str):
    """`section` (a params section) with field `name` set to another valid value."""
    for candidate in candidates_for(type(section), name, getattr(section, name)):
        try:
            return type(section).model_validate({**section.model_dump(), name: candidate})
        except Exception:
            continue
    raise AssertionError(f"found no other valid value for {name}")


def candidates_for(model, name: str, value) -> list:
    annotation = model.model_fields[name].annotation
    if typing.get_origin(annotation) is typing.Literal:
        return [choice for choice in typing.get_args(annotation) if choice != value]
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, (int, float)):
        return [value + 1, value * 0.5, value * 1.5, 0.1, 2]
    if isinstance(value, tuple):
        return [(value[0] * 0.9, *value[1:])]
    return [None] if value is not None else [1, 0.5]


# --- stages -------------------------------------------------------------------------------------------------

def test_every_stage_a_setting_shapes_lists_it_and_no_stage_lists_one_by_hand():
    """A setting's stages in dvc.yaml are those its role names; every key a stage lists is there because a role names
    that stage, but the params its jobs differ by (the pretrain job's own sections, `${item}`, `pretrain.${key}`)."""
    listed = stage_params()
    roles = dict(declared(Params))
    assert roles, "the schema declares no roles"
    for key, role in roles.items():
        for stage in role.stages:
            assert stage in STAGES, (key, stage)
            assert key in listed[stage.replace("-", "_")], (key, stage)
    for stage, keys in listed.items():
        for key in keys:
            if "${" not in key and not key.startswith("methods."):  # a method's own fields: the next test
                assert key in roles and stage in {name.replace("-", "_") for name in roles[key].stages}, (stage, key)
    for command, spec in STAGES.items():
        own = spec.params[:len(spec.params) - len(declared_params(command))]  # what the row itself lists
        assert all("${" in str(getattr(key, "value", key)) for key in own), (command, own)
    for name, body in yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"].items():
        listed_keys = [str(key) for key in body.get("do", body).get("params", [])]
        assert len(listed_keys) == len(set(listed_keys)), (name, listed_keys)


# --- resume -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("key", keys_with(FinetuneParams, RESUMED))
def test_a_finished_seed_trained_with_another_value_of_a_training_setting_is_trained_again(workspace, tmp_path, key):
    """The seed's fingerprint (`_signature`, what a retry compares) changes with every setting whose role says
    `resume`: a finished seed kept with one value is not copied back for another."""
    params = tiny_params()
    changed = params.model_copy(update={"finetune": with_value(params.finetune, key)})

    def signature(chosen):
        settings = finetune.FinetuneSettings.of(chosen)
        prepared = finetune.load_task(settings, tokens_of(chosen, "rt_polarity", workspace / "tasks", workspace / "bpe"),
                                    workspace / "pretrain")
        method = resolve("full", chosen)
        model = finetune.language_model(method, prepared.tokens.vocab_size, workspace / "pretrain",
                                        settings.fresh_model, None, None)
        return finetune._signature(prepared, finetune.SeedRun(method, 1), model, 32)

    before, after = signature(params), signature(changed)
    assert before != after
    output = tmp_path / "seed1"
    output.mkdir()
    (output / "metrics.json").write_text("{}")
    SeedState(tmp_path / "state", before, 1).keep_finished([output])
    assert not SeedState(tmp_path / "state", after, 1).restore_finished([output])
    assert SeedState(tmp_path / "state", before, 1).restore_finished([output])


def _seed_signature(chosen, workspace, method_name: str = "full") -> str:
    settings = finetune.FinetuneSettings.of(chosen)
    prepared = finetune.load_task(settings, tokens_of(chosen, "rt_polarity", workspace / "tasks", workspace / "bpe"),
                                workspace / "pretrain")
    method = resolve(method_name, chosen)
    model = finetune.language_model(method, prepared.tokens.vocab_size, workspace / "pretrain", settings.fresh_model,
                                    None, None)
    return finetune._signature(prepared, finetune.SeedRun(method, 1), model, 32)


def test_adding_a_method_keeps_every_finished_seed_of_the_others(workspace, tmp_path):
    """A method is params data, and a seed's fingerprint holds its own method's entry (resolved) and the fine-tuning
    stages' code fingerprints, not every module: a new entry leaves full's seeds as they were, restored, not
    re-trained, while a change of full's own entry trains them again."""
    from gpt1.params.schema import parse_params
    from tiny import tiny_raw_params

    copy = {"label": "a copy of full", "meaning": "the same", "starts_from": "transformer", "auxiliary_lm": True,
            "lr": None, "finding": "", "finding_by_size": False}
    params = parse_params(tiny_raw_params())
    added = parse_params(tiny_raw_params(methods={"full_copy": copy}, finetune={"methods": ["full", "full_copy"]}))
    own_rate = parse_params(tiny_raw_params(methods={"full": {"lr": 3e-3}}))
    before = _seed_signature(params, workspace)
    assert _seed_signature(added, workspace) == before
    assert _seed_signature(own_rate, workspace) != before
    output = tmp_path / "seed1"
    output.mkdir()
    (output / "metrics.json").write_text("{}")
    SeedState(tmp_path / "state", before, 1).keep_finished([output])
    assert SeedState(tmp_path / "state", _seed_signature(added, workspace), 1).restore_finished([output])


def test_a_pretraining_resume_checkpoint_must_match_every_setting_that_shapes_the_trajectory():
    params = load_params(ROOT / "params.yaml", [ROOT / "profiles" / "tiny.yaml"])

    def signature(chosen, kind="transformer"):
        settings = PretrainSettings.of(chosen, kind)
        return run_signature(settings, kind, model_config(settings.size, 100), 10_000)

    pretrain = params.pretrain
    keys = keys_with(type(pretrain), RESUMED)
    assert {"betas", "tokens_per_update", "checkpoints", "init_from"} <= set(keys)
    for key in keys:
        if key in ("max_steps", "epochs", "init_from"):  # a length enters as the schedule resolves it; see below
            continue
        changed = params.model_copy(update={"pretrain": with_value(pretrain, key)})
        assert signature(changed) != signature(params), key
    for key in keys_with(type(pretrain.transformer), RESUMED):
        own = with_value(pretrain.transformer, key)
        changed = params.model_copy(update={"pretrain": pretrain.model_copy(update={"transformer": own})})
        assert signature(changed) != signature(params), key
    longer = params.model_copy(update={"pretrain": pretrain.model_copy(update={"max_steps": pretrain.max_steps + 1})})
    assert signature(longer) != signature(params)
    released = params.model_copy(update={"pretrain": pretrain.model_copy(update={"init_from": "weights"})})
    assert signature(released) != signature(params)
    assert signature(released, "lstm") == signature(params, "lstm")  # only the Transformer starts from given weights


# --- card ---------------------------------------------------------------------------------------------------

def test_the_model_card_records_every_setting_whose_role_says_so(workspace):
    """Each `card` setting, with its value, in the card of a run; nothing a stage loops over."""
    params = tiny_params()
    _, out = run_and_card(workspace, params)
    card = (out / "model_card.md").read_text()
    line = next(line for line in card.splitlines() if line.startswith("- `{"))
    recorded = json.loads(line.removeprefix("- `").removesuffix("`"))
    assert sorted(recorded) == sorted(keys_with(FinetuneParams, lambda role: role.card))
    for key, value in recorded.items():
        expected = getattr(params.finetune, key)
        assert value == (list(expected) if isinstance(expected, tuple) else expected), key
    assert "methods" not in recorded and "seeds" not in recorded


def run_and_card(workspace: Path, params):
    out = workspace / "out" / "roles-card"
    metrics = finetune.run(finetune.FinetuneSettings.of(params),
                           tokens_of(params, "rt_polarity", workspace / "tasks", workspace / "bpe"),
                           resolve("full", params), 1, pretrain_dir=workspace / "pretrain", out_dir=out)
    return metrics, out


# --- a setting added to the schema alone ----------------------------------------------------------------------

class ExtendedFinetune(FinetuneParams):
    new_knob: Annotated[float, TRAINING] = Field(default=0.25, ge=0)


class ExtendedParams(Params):
    finetune: ExtendedFinetune


def test_a_setting_added_to_the_schema_alone_reaches_the_stages_the_fingerprint_and_the_card():
    for stage in TRAINING.stages:
        assert "finetune.new_knob" in declared_params(stage, ExtendedParams)
        assert "finetune.new_knob" not in declared_params(stage)
    extended = ExtendedFinetune.model_validate(tiny_params().finetune.model_dump())
    assert "new_knob" in keys_with(type(extended), RESUMED)  # what `_signature` reads, from the section's class
    assert "new_knob" in card_settings(extended)


def test_a_fine_tuning_job_lists_its_own_methods_entry_and_no_others():
    """A method's entry is data: a fine-tuning job lists the fields of its own method's entry that it reads (its rate
    among them), a layer-transfer or transfer-curve job full's, the starting-model job its method's starting model;
    the fields only the tables read (label, finding) are listed by the ablation, which lists the section whole."""
    listed = stage_params()
    own = {"methods.${item.method}." + field for field in ("meaning", "starts_from", "auxiliary_lm", "lr")}
    assert {key for key in listed["finetune"] if key.startswith("methods")} == own
    for stage in ("layer_transfer", "transfer_curve"):
        assert {key for key in listed[stage] if key.startswith("methods")} == {
            key.replace("${item.method}", "full") for key in own}
    assert {key for key in listed["starting_model"] if key.startswith("methods")} == {"methods.${item.method}.starts_from"}
    assert "methods" in listed["ablation"]
    assert not [stage for stage, keys in listed.items() if stage != "ablation"
                and any(key == "methods" or ".label" in key or ".finding" in key for key in keys)]
