"""pretrain.epochs, the paper's unit: the updates resolved once from the tokenized corpus by hand arithmetic, the
length given once, and the transfer curve's steps resolved to kept checkpoints. The corpus's size comes in from the
stage (data/tokens/meta.json, gpt1/files/tokens_meta.py): the params layer reads no pipeline output."""

import json
import math

import pytest

from gpt1.errors import UserError
from gpt1.files.tokens_meta import training_tokens
from gpt1.kinds import LSTM, TRANSFORMER
from gpt1.params.schedule import PretrainSchedule
from gpt1.params.schema import parse_params
from tiny import tiny_raw_params


def _epochs(epochs=3, **pretrain):
    return tiny_raw_params(pretrain={**pretrain, "max_steps": None, "epochs": epochs})


def _tokenized(folder, train_tokens: int) -> None:
    """data/tokens/meta.json as `gpt1 tokenize` writes it, for a corpus of `train_tokens` training tokens."""
    (folder / "data/tokens").mkdir(parents=True)
    (folder / "data/tokens/meta.json").write_text(json.dumps({
        "dtype": "uint16", "vocab_size": 300, "train": {"documents": 7, "tokens": train_tokens, "characters": 1},
        "val": {"documents": 1, "tokens": 10, "characters": 1}}))


def test_epochs_resolve_the_updates_from_the_tokenized_corpus(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _tokenized(tmp_path, 10_000)
    params = parse_params(_epochs(3, tokens_per_update=1_024))
    # 3 passes over 10,000 tokens in updates of 1,024: 30,000 / 1,024 = 29.3, the last update partly a fourth pass
    assert training_tokens() == 10_000
    schedule = PretrainSchedule.of(params.pretrain, TRANSFORMER, training_tokens())
    assert schedule.updates == math.ceil(30_000 / 1_024) == 30
    with pytest.raises(UserError, match="is not there yet"):  # the file alone does not reach the schedule
        PretrainSchedule.of(params.pretrain, TRANSFORMER).updates
    assert PretrainSchedule.of(params.pretrain, TRANSFORMER, corpus_tokens=2_048).updates == 6  # an estimate given
    # a kind's own max_steps still wins over the epochs
    raw = _epochs(3, tokens_per_update=1_024)
    raw["pretrain"]["lstm"]["max_steps"] = 5
    assert PretrainSchedule.of(parse_params(raw).pretrain, LSTM).updates == 5


def test_before_the_corpus_is_tokenized_the_params_load_and_the_updates_name_the_stage(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert training_tokens() is None
    schedule = PretrainSchedule.of(parse_params(_epochs()).pretrain, TRANSFORMER, training_tokens())
    assert schedule.pretrains and not schedule.known
    with pytest.raises(UserError, match=r"data/tokens/meta.json is not there yet: run `gpt1 tokenize` first"):
        schedule.updates


@pytest.mark.parametrize("max_steps, epochs", [(100, 3), (None, None)])
def test_the_length_is_given_once(max_steps, epochs):
    raw = tiny_raw_params(pretrain={"max_steps": max_steps, "epochs": epochs})
    with pytest.raises(UserError, match=r"give the pretraining's length once: pretrain.max_steps \(updates\) or "
                                        r"pretrain.epochs"):
        parse_params(raw)


def test_with_epochs_each_curve_step_is_the_nearest_kept_checkpoint(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _tokenized(tmp_path, 100_000)
    raw = _epochs(10, tokens_per_update=1_000, checkpoints=5)  # 1,000 updates: kept 1, 6, 32, 178, 1,000
    params = parse_params(raw)
    schedule = PretrainSchedule.of(params.pretrain, TRANSFORMER, training_tokens())
    assert schedule.kept_checkpoints == (1, 6, 32, 178, 1000)
    assert schedule.curve_steps([5, 30, 40, 200, 990]) == [6, 32, 178]  # never the last: that is full's own run


def test_a_models_own_max_steps_keeps_the_curve_steps_to_its_kept_checkpoints():
    """With epochs but the Transformer's own max_steps, its updates are known: steps are checked, not snapped."""
    raw = _epochs(3, checkpoints=3)
    raw["pretrain"]["transformer"]["max_steps"] = 100
    raw["analysis"]["transfer_curve_steps"] = [7]
    with pytest.raises(UserError, match=r"analysis.transfer_curve_steps: \[7\] are not kept pretraining checkpoints"):
        parse_params(raw)
    raw["analysis"]["transfer_curve_steps"] = [0]
    with pytest.raises(UserError, match="transfer_curve_steps"):
        parse_params(_epochs(3) | {"analysis": raw["analysis"]})
