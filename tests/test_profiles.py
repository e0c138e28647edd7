"""Every shipped parameter file validates, and the paper profile holds the paper's numbers."""

from pathlib import Path

from gpt1.config import load_params

ROOT = Path(__file__).resolve().parents[1]


def test_default_params_validate():
    load_params(ROOT / "params.yaml")


def test_paper_profile_is_the_paper():
    paper = load_params(ROOT / "profiles" / "paper.yaml")
    assert (paper.model.n_layer, paper.model.n_head, paper.model.d_model, paper.model.d_ff,
            paper.model.n_positions) == (12, 12, 768, 3072, 512)
    assert paper.bpe.merges == 40_000
    assert paper.pretrain.tokens_per_update == 64 * 512 and paper.pretrain.warmup_steps == 2000
    assert paper.pretrain.transformer.max_lr == 2.5e-4
    assert (paper.finetune.lr, paper.finetune.batch_size, paper.finetune.epochs, paper.finetune.lm_coef) == (
        6.25e-5, 32, 3, 0.5)
    assert {"cola", "sst2", "mrpc", "stsb", "qqp", "mnli", "qnli", "rte", "snli", "scitail", "race",
            "story_cloze"} <= set(paper.data.tasks)
    assert (paper.lstm.n_layer, paper.lstm.d_hidden) == (1, 2048)


def test_layer_transfer_must_fit_the_model(tmp_path):
    import pytest
    import yaml

    from gpt1.errors import UserError

    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    raw["analysis"]["layer_transfer_layers"] = [0, raw["model"]["n_layer"] + 1]
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(raw))
    with pytest.raises(UserError, match=r"^\S+: analysis.layer_transfer_layers: \[\d+\] outside 0 \.\.\. \d+ "
                                         r"\(blocks kept, below model.n_layer"):
        load_params(tmp_path / "p.yaml")
