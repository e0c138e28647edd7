"""Each fine-tuning job depends on the record of its own method's starting weights (data/starting_models): a
record changes only when those weights do, and the finetune stage refuses to train when its record is stale."""

from __future__ import annotations

import json
from argparse import Namespace
from pathlib import Path

import pytest

from gpt1.files.digests import sha256_of
from gpt1.errors import UserError
from gpt1.params.schema import load_params
from tiny import ROOT

METHODS = load_params(ROOT / "params.yaml").methods  # Table 5's methods, as params.yaml holds them
from gpt1.stages import starting_model
from gpt1.train.starting_weights import check, record, record_text


def _pretrained(root: Path, transformer: bytes = b"transformer weights", lstm: bytes = b"lstm weights") -> Path:
    for kind, content in (("transformer", transformer), ("lstm", lstm)):
        (root / kind).mkdir(parents=True, exist_ok=True)
        (root / kind / "model.safetensors").write_bytes(content)
    return root


def test_a_record_names_the_weights_and_their_hash_or_a_random_start(tmp_path):
    pretrain = _pretrained(tmp_path / "pretrain")
    full = record("full", "transformer", pretrain)
    assert full == {"method": "full", "starts_from": "transformer",
                    "weights": (pretrain / "transformer" / "model.safetensors").as_posix(),
                    "sha256": sha256_of(pretrain / "transformer" / "model.safetensors")}
    assert record("lstm", "lstm", pretrain)["weights"].endswith("lstm/model.safetensors")
    assert record("no_pretrain", None, pretrain) == {"method": "no_pretrain", "starts_from": None}
    assert record("no_pretrain", None, tmp_path / "nothing here") == record("no_pretrain", None, pretrain)  # no weights
    with pytest.raises(UserError, match=r"lstm/model.safetensors not found: 'lstm' starts from the pretrained lstm; "
                                        r"run `gpt1 pretrain --kind lstm` first"):
        record("lstm", "lstm", tmp_path / "nothing here")


def test_retraining_one_model_changes_only_the_records_of_methods_that_start_from_it(tmp_path):
    before = {name: record_text(name, entry.starts_from, _pretrained(tmp_path / "a")) for name, entry in METHODS.items()}
    after = {name: record_text(name, entry.starts_from, _pretrained(tmp_path / "a", lstm=b"retrained lstm"))
             for name, entry in METHODS.items()}
    changed = {name for name in METHODS if before[name] != after[name]}
    assert changed == {name for name, entry in METHODS.items() if entry.starts_from == "lstm"} == {"lstm"}


def test_the_stage_writes_a_record_and_keeps_an_unchanged_one_untouched(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _pretrained(tmp_path / "data" / "pretrain")
    path = tmp_path / "data" / "starting_models" / "full.json"
    starting_model.main(Namespace(method="full"), load_params(ROOT / "params.yaml"))
    assert json.loads(path.read_text())["starts_from"] == "transformer"
    stamp = path.stat().st_mtime_ns
    starting_model.main(Namespace(method="full"), load_params(ROOT / "params.yaml"))
    assert path.stat().st_mtime_ns == stamp  # Snakemake compares times: an unchanged record must not look new
    _pretrained(tmp_path / "data" / "pretrain", transformer=b"retrained")
    starting_model.main(Namespace(method="full"), load_params(ROOT / "params.yaml"))
    assert json.loads(path.read_text())["sha256"] == sha256_of(tmp_path / "data/pretrain/transformer/model.safetensors")


def test_fine_tuning_stops_on_a_missing_or_stale_record(tmp_path):
    pretrain, records = _pretrained(tmp_path / "pretrain"), tmp_path / "records"
    with pytest.raises(UserError, match=r"records/full.json not found; run `dvc repro` \(or `gpt1 starting-model "
                                        r"--method full`\)"):
        check("full", "transformer", pretrain, records)
    records.mkdir()
    for name, entry in METHODS.items():
        (records / f"{name}.json").write_text(record_text(name, entry.starts_from, pretrain))
        check(name, entry.starts_from, pretrain, records)
    _pretrained(pretrain, transformer=b"trained again by hand")
    with pytest.raises(UserError, match=r"does not describe the weights 'no_aux_lm' starts from \(they changed after "
                                        r"it was written\); run `dvc repro`"):
        check("no_aux_lm", "transformer", pretrain, records)
    check("lstm", "lstm", pretrain, records)  # its own weights did not change
    check("no_pretrain", None, pretrain, records)
