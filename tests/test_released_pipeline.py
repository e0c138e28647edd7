"""The released profile end to end, as a user runs it: `gpt1 fetch-released` on a folder in OpenAI's layout (tiny
weights), then Snakemake with profiles/paper.yaml, profiles/released.yaml and a profile of the test's own (the
tiny model's shape, the paper tasks' fixtures served over local HTTP, one task) to Table 5 and Tables 2-4."""

import json

import pandas as pd
import pytest
import yaml

from gpt1.model.lm import GPT1, TransformerConfig, load_model
from gpt1.model.weights import export_openai
from gpt1.tokenizer.bpe import Gpt1Bpe
from test_paper_pipeline import _profile
from test_paper_tasks import server  # noqa: F401  (a fixture)
from test_pipeline import BIN, _fresh_copy, _run

pytestmark = pytest.mark.slow

TASKS = ["race"]  # multiple choice: Table 5, Tables 2-4 and Figure 2 (left) with one task


def _release(folder) -> int:
    """OpenAI's model/ folder for a one-layer, 32-wide GPT-1 over a character-level BPE with a few merges."""
    base = [chr(c) for c in range(33, 127)]
    bpe = Gpt1Bpe.from_merges(base + [c + "</w>" for c in base], [("t", "h"), ("th", "e</w>"), ("a", "n")])
    export_openai(GPT1(TransformerConfig(vocab_size=len(bpe.encoder), n_positions=32, n_layer=1, n_head=2,
                                         d_model=32, d_ff=64)), folder)
    (folder / ".gpt1-output").unlink()
    bpe.write_vocabulary(folder / "encoder_bpe_3.json", folder / "vocab_3.bpe")
    return len(bpe.encoder)


@pytest.fixture(scope="module")
def released_run(server, tmp_path_factory):  # noqa: F811
    repo = _fresh_copy(tmp_path_factory.mktemp("released"))
    outside = tmp_path_factory.mktemp("released_files")
    vocab = _release(outside / "model")
    overlay = _profile(server, outside)
    overlay["data"] = {**overlay["data"], "tasks": TASKS, "local_paths": {}}
    del overlay["data"]["corpus"]  # the released profile's: the tasks' own text
    overlay["bpe"] = {"merges": 3}
    overlay["pretrain"] = {"eval_tokens": 64}
    (outside / "fixtures.yaml").write_text(yaml.safe_dump(overlay))
    _run(["gpt1", "fetch-released", str(outside / "model"), "--n-head", "2"], repo)
    profiles = ["profiles/paper.yaml", "profiles/tiny.yaml", "profiles/released.yaml", str(outside / "fixtures.yaml")]
    log = _run([str(BIN / "snakemake"), "--cores", "2", "--configfile", *profiles], repo)
    return repo, vocab, log


def test_table5_and_tables_2_to_4_come_from_the_released_weights(released_run):
    repo, vocab, _ = released_run
    table = pd.read_csv(repo / "results/ablation.csv", index_col="method")
    assert list(table.index) == ["full", "no_pretrain", "no_aux_lm"] and list(table.columns) == ["avg", *TASKS]
    assert set(pd.read_csv(repo / "results/paper_tables.csv")["task"]) >= set(TASKS)
    assert set(pd.read_csv(repo / "results/layer_transfer.csv")["task"]) == {"race"}
    published = load_model(repo / "data/pretrain/transformer/model.safetensors")
    assert published.config.vocab_size == vocab + 3  # the special tokens' rows added
    summary = json.loads((repo / "results/pretrain/transformer/metrics.json").read_text())
    assert summary["step"] == 0


def test_what_needs_a_pretraining_of_ours_says_it_does_not_apply(released_run):
    repo, _, _ = released_run
    for table in ("transfer_curve.csv", "zero_shot.csv"):
        reason = pd.read_csv(repo / "results" / table)["not_applicable"].item()
        assert "pretrain.max_steps 0" in reason, table
    assert "no released weights" in json.loads((repo / "results/pretrain/lstm/headline.json").read_text())["lstm"][
        "not applicable"]
    assert not (repo / "results/finetune/lstm").exists()
