"""Fine-tuning end to end on tiny models: every family, every method, the heads, the objective, determinism."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from gpt1.train import finetune, finetune_loop, finetune_predict, finetune_start
from gpt1.methods import resolve
from gpt1.train.lr_schedules import warmup_linear
from gpt1.params.schema import Params, parse_params
from gpt1.errors import UserError
from gpt1.model.heads import TaskModel, collate, lm_loss
from gpt1.model.lm import build_model, save_model
from gpt1.data.records import (
    ClassificationExample,
    EntailmentExample,
    MultipleChoiceExample,
    SimilarityExample,
    TaskSpec,
    write_examples,
)
from gpt1.data.task_data import Samples, load_task_data
from gpt1.model.task_encoding import encode_task
from gpt1.model.task_tokens import TaskTokens
from gpt1.model.transforms import EncodedExample
from gpt1.tokenizer.bpe import Gpt1Bpe
from test_transforms import tiny_bpe
from tiny import TINY_LSTM, TINY_MODEL, tiny_raw_params

TASKS = ("rt_polarity", "snli_100k", "lee_similarity", "social_iqa")  # one per family


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny models gain nothing from threads, and on a busy machine OpenMP waits make them 10x slower."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def tiny_params(**finetune_overrides) -> Params:
    settings = dict(methods=["full", "no_pretrain", "no_aux_lm", "lstm"], seeds=[1, 2], lr=1e-3, batch_size=4,
                    epochs=1, max_train_examples=12, max_eval_examples=6, device="cpu", dtype="float32")
    raw = tiny_raw_params(data={"tasks": list(TASKS)}, finetune={**settings, **finetune_overrides})
    return parse_params(raw, "tiny params")


def _examples(family: str, count: int, offset: int) -> list:
    good, bad = ("good fine great", "bad poor awful")
    rows = []
    for i in range(offset, offset + count):
        label = i % 2
        word = good if label else bad
        if family == "classification":
            rows.append(ClassificationExample(f"the film {i} was {word}.", label))
        elif family == "entailment":
            rows.append(EntailmentExample(f"a man {i} sits", f"a person is {word}", i % 3))
        elif family == "similarity":
            rows.append(SimilarityExample(f"cats {i} sleep", f"dogs {word} bark", float(i % 5) / 4))
        else:
            rows.append(MultipleChoiceExample(f"tom met ann {i}. who smiled?", ("tom", "ann", "both"), i % 3))
    return rows


SPECS = {
    "rt_polarity": TaskSpec("rt_polarity", "classification", ("negative", "positive"), ("accuracy",), "test"),
    "snli_100k": TaskSpec("snli_100k", "entailment", ("entailment", "neutral", "contradiction"), ("accuracy",),
                          "test"),
    "lee_similarity": TaskSpec("lee_similarity", "similarity", (), ("pearson", "spearman"), "test"),
    "social_iqa": TaskSpec("social_iqa", "multiple_choice", (), ("accuracy",), "test"),
}


def write_task(folder: Path, spec: TaskSpec, sizes=(16, 8, 8), offsets=(0, 100, 200)) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "task.json").write_text(spec.to_json())
    for split, count, offset in zip(("train", "dev", "test"), sizes, offsets):
        write_examples(folder / f"{split}.jsonl", _examples(spec.family, count, offset))


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    """data/tasks, data/bpe and tiny pretrained checkpoints (without the special tokens) under one root."""
    root = tmp_path_factory.mktemp("finetune")
    bpe = tiny_bpe()
    bpe.save(root / "bpe")
    for name, spec in SPECS.items():
        write_task(root / "tasks" / name, spec)
    torch.manual_seed(0)
    vocab = bpe.vocab_size - 3
    transformer = {k: v for k, v in TINY_MODEL.items() if k != "dropout"}
    save_model(build_model("transformer", dict(vocab_size=vocab, **transformer)),
               root / "pretrain" / "transformer" / "model.safetensors")
    save_model(build_model("lstm", dict(vocab_size=vocab, **TINY_LSTM)), root / "pretrain" / "lstm" / "model.safetensors")
    return root


def tokens_of(params: Params, task: str, tasks_dir: Path, bpe_dir: Path) -> TaskTokens:
    """A task's tokens as the encode_task stage makes them, in memory."""
    return encode_task(task, load_task_data(Samples.of(params), task, tasks_dir), Gpt1Bpe.load(bpe_dir))


def _method(name: str):
    return resolve(name, tiny_params())


def run(workspace: Path, task: str, method: str, seed: int = 1, out: str | None = None, params=None, **kwargs):
    out_dir = workspace / "out" / (out or f"{task}-{method}-{seed}")
    params = params or tiny_params()
    metrics = finetune.run(finetune.FinetuneSettings.of(params), tokens_of(params, task, workspace / "tasks", workspace / "bpe"),
                           resolve(method, params), seed,
                           pretrain_dir=workspace / "pretrain", out_dir=out_dir, **kwargs)
    return metrics, out_dir


# --- end to end ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("task, method", [
    *((task, "full") for task in TASKS), *((task, "lstm") for task in TASKS),
    ("rt_polarity", "no_pretrain"), ("rt_polarity", "no_aux_lm"),
])
def test_each_family_and_method_trains_predicts_and_scores(workspace, task, method):
    metrics, out_dir = run(workspace, task, method)
    spec = SPECS[task]
    assert sorted(path.name for path in out_dir.iterdir()) == [
        "metrics.json", "model_card.md", "predictions_dev.jsonl", "predictions_test.jsonl"]
    assert json.loads((out_dir / "metrics.json").read_text()) == metrics
    assert set(metrics) == {"dev", "test"} and set(metrics["test"]) == set(spec.metrics)
    rows = [json.loads(line) for line in (out_dir / "predictions_test.jsonl").read_text().splitlines()]
    assert len(rows) == 6  # max_eval_examples
    if spec.is_regression:
        assert all(isinstance(row["prediction"], float) for row in rows)
    else:
        classes = 3 if spec.family == "multiple_choice" else len(spec.labels)
        for row in rows:
            assert len(row["probabilities"]) == classes
            assert sum(row["probabilities"]) == pytest.approx(1.0, abs=1e-5)
            assert row["prediction"] == max(range(classes), key=row["probabilities"].__getitem__)
    card = (out_dir / "model_card.md").read_text()
    assert f"{task} / {method} / seed 1" in card and "| train | 16 | 12 |" in card


def test_same_seed_writes_identical_files_and_another_seed_does_not(workspace):
    _, first = run(workspace, "social_iqa", "full", seed=3, out="again-1")
    _, second = run(workspace, "social_iqa", "full", seed=3, out="again-2")
    _, other = run(workspace, "social_iqa", "full", seed=4, out="again-3")
    for name in ("metrics.json", "model_card.md", "predictions_dev.jsonl", "predictions_test.jsonl"):
        assert (first / name).read_bytes() == (second / name).read_bytes(), name
    assert (first / "predictions_test.jsonl").read_bytes() != (other / "predictions_test.jsonl").read_bytes()


def run_seeds(workspace: Path, task: str, method: str, seeds, out: str, **kwargs) -> Path:
    out_root = workspace / "out" / out
    params = tiny_params()
    finetune.run_seeds(finetune.FinetuneSettings.of(params), tokens_of(params, task, workspace / "tasks", workspace / "bpe"),
                       resolve(method, params), seeds,
                       pretrain_dir=workspace / "pretrain", out_root=out_root, **kwargs)
    return out_root


@pytest.mark.parametrize("task, method, transfer_layers", [
    ("lee_similarity", "no_pretrain", None),  # fresh init, Transformer dropout, regression head
    ("social_iqa", "full", 1),  # re-initialised block, the candidates' shared classifier-dropout mask
])
def test_seeds_in_one_process_write_what_each_seed_writes_alone(workspace, task, method, transfer_layers):
    """The stage runs every seed in one process: no RNG state, cache or encoding may carry over between them."""
    together = run_seeds(workspace, task, method, [1, 2], f"together-{task}", transfer_layers=transfer_layers)
    for seed in (2, 1):  # seed 2 first: alone, it follows nothing
        alone = run_seeds(workspace, task, method, [seed], f"alone-{task}-{seed}", transfer_layers=transfer_layers)
        assert [path.name for path in alone.iterdir()] == [f"seed{seed}"]
        files = sorted(path.name for path in (together / f"seed{seed}").iterdir())
        assert files == ["metrics.json", "model_card.md", "predictions_dev.jsonl", "predictions_test.jsonl"]
        for name in files:
            assert (together / f"seed{seed}" / name).read_bytes() == (alone / f"seed{seed}" / name).read_bytes(), \
                (seed, name)
    assert (together / "seed1" / "predictions_test.jsonl").read_bytes() != \
        (together / "seed2" / "predictions_test.jsonl").read_bytes()  # the seeds do differ
    call = f"resolve({method!r}, params), 2, transfer_layers={transfer_layers}, pretrain_step=None, ...)`"
    assert call in (together / "seed2" / "model_card.md").read_text()  # the library's call: no stage spelled one


@pytest.mark.parametrize("method", ["lstm", "full"])
def test_a_run_after_other_tasks_and_depths_in_one_process_writes_what_it_writes_first(workspace, method):
    """A method's job runs every task in one process, a layer-transfer job every k: nothing of an earlier task or
    depth (its tokens, encodings, model or RNG state) may reach a later run."""
    before = run_seeds(workspace, "social_iqa", method, [1], f"first-{method}")
    run_seeds(workspace, "rt_polarity", method, [2], f"between-{method}")
    run_seeds(workspace, "lee_similarity", method, [1], f"between-sim-{method}",
              transfer_layers=0 if method == "full" else None)
    after = run_seeds(workspace, "social_iqa", method, [1], f"after-{method}")
    for name in ("metrics.json", "model_card.md", "predictions_dev.jsonl", "predictions_test.jsonl"):
        assert (before / "seed1" / name).read_bytes() == (after / "seed1" / name).read_bytes(), name


def test_a_run_can_start_from_a_kept_pretraining_checkpoint(workspace):
    """The transfer curve fine-tunes `full` from the checkpoint after update S: other weights than the final
    ones, said in the model card with the call that re-runs it; an update without a checkpoint is refused."""
    from gpt1.layout import pretraining_checkpoint
    from gpt1.tokenizer.bpe import Gpt1Bpe

    torch.manual_seed(7)  # an earlier checkpoint: other weights than model.safetensors
    transformer = {k: v for k, v in TINY_MODEL.items() if k != "dropout"}
    vocab = Gpt1Bpe.load(workspace / "bpe").vocab_size - 3  # as the fixture's: without the special tokens
    save_model(build_model("transformer", dict(vocab_size=vocab, **transformer)),
               pretraining_checkpoint("transformer", 2, workspace / "pretrain"))
    early = run_seeds(workspace, "rt_polarity", "full", [1], "from-step2", pretrain_step=2)
    final = run_seeds(workspace, "rt_polarity", "full", [1], "from-final")
    card = (early / "seed1" / "model_card.md").read_text()
    assert "starting checkpoint: after pretraining update 2" in card
    assert "transfer_layers=None, pretrain_step=2, ...)`" in card
    assert (early / "seed1" / "predictions_test.jsonl").read_bytes() != \
        (final / "seed1" / "predictions_test.jsonl").read_bytes()
    assert "starting checkpoint" not in (final / "seed1" / "model_card.md").read_text()
    with pytest.raises(UserError, match=r"step_5.safetensors not found: the transformer pretraining kept checkpoints "
                                        r"after updates \[2\]"):
        run_seeds(workspace, "rt_polarity", "full", [1], "from-step5", pretrain_step=5)
    with pytest.raises(UserError, match="no_pretrain' starts from random weights"):
        run_seeds(workspace, "rt_polarity", "no_pretrain", [1], "random-from-step2", pretrain_step=2)


def test_save_weights_flag_writes_the_fine_tuned_model(workspace):
    _, out_dir = run(workspace, "rt_polarity", "full", out="weights", save_weights=True)
    from safetensors.torch import load_file

    saved = load_file(str(out_dir / "model.safetensors"))
    pretrained = load_file(str(workspace / "pretrain" / "transformer" / "model.safetensors"))
    assert saved["head.weight"].shape[0] == 2 and all(t.isfinite().all() for t in saved.values())
    name = next(key for key in pretrained if key.startswith("h.0.") and key.endswith("weight"))
    assert not torch.equal(saved[f"language_model.{name}"], pretrained[name])  # fine-tuned, not the start


# --- heads and objective -------------------------------------------------------------------------------------

def tiny_task_model(spec: TaskSpec, dropout: float = 0.0, classifier_dropout: float = 0.1,
                    kind: str = "transformer") -> TaskModel:
    torch.manual_seed(0)
    if kind == "lstm":
        lm = build_model("lstm", dict(vocab_size=50, n_layer=1, d_embed=32, d_hidden=48, dropout=dropout))
    else:
        lm = build_model("transformer", dict(vocab_size=50, n_positions=32, n_layer=2, n_head=2, d_model=32,
                                             d_ff=64, embd_dropout=dropout, attn_dropout=dropout,
                                             resid_dropout=dropout))
    return TaskModel(lm, spec, classifier_dropout)


def test_similarity_prediction_is_symmetric_in_eval_mode():
    model = tiny_task_model(SPECS["lee_similarity"]).eval()
    a, b = (1, 5, 6, 7), (8, 9)
    forward = EncodedExample(((40, *a, 41, *b, 42), (40, *b, 41, *a, 42)), 0.5)
    swapped = EncodedExample(((40, *b, 41, *a, 42), (40, *a, 41, *b, 42)), 0.5)
    with torch.no_grad():
        scores, _ = model(collate([forward, swapped], regression=True))
    assert scores.shape == (2,)
    torch.testing.assert_close(scores[0], scores[1])


def test_regression_head_learns_standardised_targets_and_answers_in_label_units():
    model = tiny_task_model(SPECS["lee_similarity"]).eval()
    model.set_target_scale([0.2, 0.4, 0.2, 0.4])  # mean 0.3, spread 0.1
    pair = collate([EncodedExample(((40, 1, 41, 2, 42), (40, 2, 41, 1, 42)), 0.5)], regression=True)
    with torch.no_grad():
        scores, _ = model(pair)
        raw = model.head(model.language_model.hidden_states(pair.input_ids)[:, -1].sum(0)).squeeze(-1)
    torch.testing.assert_close(scores, 0.3 + 0.1 * raw[None])
    # the loss is the MSE of the standardised values: 100x the label-unit MSE at spread 0.1
    torch.testing.assert_close(model.task_loss(scores, pair.labels), ((scores - 0.5) / 0.1).pow(2).mean())
    assert "target_scale" in model.state_dict()  # saved with fine-tuned weights
    model.set_target_scale([0.7, 0.7])  # a constant target keeps scale 1
    assert model.target_scale.item() == 1.0 and model.target_mean.item() == pytest.approx(0.7)


def test_output_layer_stays_fp32_under_bf16_autocast():
    model = tiny_task_model(SPECS["rt_polarity"]).eval()
    batch = collate([EncodedExample(((40, 1, 2, 42),), 1)], regression=False)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        scores, _ = model(batch)
    assert scores.dtype == torch.float32


def test_multiple_choice_scores_are_a_softmax_over_candidates_with_missing_ones_masked():
    model = tiny_task_model(SPECS["social_iqa"]).eval()
    three = EncodedExample(((40, 1, 41, 2, 42), (40, 1, 41, 3, 42), (40, 1, 41, 4, 4, 42)), 2)
    two = EncodedExample(((40, 5, 41, 6, 42), (40, 5, 41, 7, 42)), 0)
    with torch.no_grad():
        scores, _ = model(collate([three, two], regression=False))
    assert scores.shape == (2, 3) and scores[1, 2] == float("-inf")
    probabilities = torch.softmax(scores, dim=-1)
    torch.testing.assert_close(probabilities.sum(-1), torch.ones(2))
    assert probabilities[1, 2] == 0
    # each candidate's score is the head applied to its own [e] state, alone
    with torch.no_grad():
        alone, _ = model(collate([EncodedExample((three.sequences[1],), 0)], regression=False))
    torch.testing.assert_close(scores[0, 1], alone[0, 0])


def test_classifier_dropout_mask_is_shared_by_all_candidates():
    model = tiny_task_model(SPECS["social_iqa"], dropout=0.0, classifier_dropout=0.5).train()
    same = (40, 1, 2, 41, 3, 42)
    with torch.no_grad():
        scores, _ = model(collate([EncodedExample((same, same, same), 0)] * 4, regression=False))
    assert torch.equal(scores[:, 0], scores[:, 1]) and torch.equal(scores[:, 1], scores[:, 2])
    assert not torch.equal(scores[0], scores[1])  # but each example draws its own mask


def test_auxiliary_lm_weight_changes_the_loss_by_lambda_times_the_lm_loss():
    model = tiny_task_model(SPECS["rt_polarity"]).eval()
    batch = collate([EncodedExample(((40, 1, 2, 3, 42),), 1), EncodedExample(((40, 4, 42),), 0)], regression=False)
    without, task_only, no_lm = model.loss(batch, 0.0)
    with_lm, task_again, language = model.loss(batch, 0.5)
    assert no_lm is None and torch.equal(without, task_only) and torch.equal(task_only, task_again)
    assert language > 0 and with_lm != without
    torch.testing.assert_close(with_lm, task_again + 0.5 * language)


@pytest.mark.parametrize("name", ["full", "no_pretrain", "no_aux_lm", "lstm"])
def test_every_loss_term_is_made_on_the_models_device_in_one_float_dtype(name):
    """An update stacks (L3, L2, L1) on the model's device. With the default device set to `meta`, the CPU model
    stands in for a GPU one: a tensor made without naming a device (a bare `torch.zeros(())` for the L1 that
    λ = 0 skips, a dropout mask) lands on meta here as it lands on the CPU beside a CUDA model."""
    from gpt1 import methods

    method = methods.resolve(name, tiny_params())
    model = tiny_task_model(SPECS["rt_polarity"], dropout=0.1, kind=method.starts_from or "transformer").train()
    batch = collate([EncodedExample(((40, 1, 2, 3, 42),), 1), EncodedExample(((40, 4, 42),), 0)], regression=False)
    lm_coef = method.lm_coef
    with torch.device("meta"):
        losses = finetune_loop.batch_losses(model, batch, lm_coef)
    device = next(model.parameters()).device
    assert len(losses) == 3 and [loss.device for loss in losses] == [device] * 3
    assert len({loss.dtype for loss in losses}) == 1 and losses[0].dtype.is_floating_point
    assert (losses[2] == 0).item() == (lm_coef == 0)


def test_predictions_reach_the_host_once_per_batch(monkeypatch):
    """Each read of a GPU tensor on the host waits for the device: one copy per batch, none per row, and the
    rows' lengths come from the host (Batch.host_lengths), not back from the device."""
    model = tiny_task_model(SPECS["rt_polarity"]).eval()
    examples = [EncodedExample(((40, *range(1, 2 + i % 6), 42),), i % 2) for i in range(10)]
    expected = finetune_predict.predict(model, examples, 4, torch.device("cpu"))
    reads = []
    for name in ("cpu", "tolist", "item", "numpy"):
        def counted(self, *args, _name=name, _original=getattr(torch.Tensor, name), **kwargs):
            reads.append(_name)
            return _original(self, *args, **kwargs)
        monkeypatch.setattr(torch.Tensor, name, counted)
    outputs = finetune_predict.predict(model, examples, 4, torch.device("cpu"))
    monkeypatch.undo()
    assert reads == ["cpu"] * 3  # 10 examples in batches of 4
    assert all(torch.equal(a, b) for a, b in zip(outputs, expected))


def test_a_batch_moved_to_the_cpu_is_not_pinned_and_keeps_its_lengths_on_the_host(monkeypatch):
    """Pinned memory is for copies to a GPU: on a CPU-only machine pinning fails or only costs time."""
    monkeypatch.setattr(torch.Tensor, "pin_memory", lambda self, *args, **kwargs: pytest.fail("pinned on a CPU"))
    batch = collate([EncodedExample(((40, 1, 2, 3, 42),), 1), EncodedExample(((40, 4, 42),), 0)], regression=False)
    moved = batch.to(torch.device("cpu"))
    assert moved.host_lengths == (5, 3) and torch.equal(moved.lengths, torch.tensor([5, 3]))


def test_fine_tuning_announces_its_device_precision_and_why(caplog, tmp_path):
    caplog.set_level("INFO", logger="gpt1.train.precision")
    prepared = finetune.load_task(finetune.FinetuneSettings.of(tiny_params()), tokens=None, pretrain_dir=tmp_path)
    assert prepared.device == torch.device("cpu")
    assert "running on cpu in fp32: finetune.device is cpu" in caplog.messages


def test_lm_loss_ignores_padding():
    model = tiny_task_model(SPECS["rt_polarity"]).eval()
    short = EncodedExample(((40, 1, 2, 42),), 0)
    batch = collate([short], regression=False)
    padded = collate([short], regression=False)
    padded.input_ids = torch.cat([padded.input_ids, torch.full((1, 5), 7)], dim=1)  # any pad id
    with torch.no_grad():
        losses = [lm_loss(model.language_model, model.language_model.hidden_states(b.input_ids), b)
                  for b in (batch, padded)]
    torch.testing.assert_close(losses[0], losses[1])


def test_the_head_is_decayed_and_its_bias_is_not():
    model = tiny_task_model(SPECS["rt_polarity"])
    decayed, plain = model.parameter_groups(0.01)
    assert any(p is model.head.weight for p in decayed["params"]) and decayed["weight_decay"] == 0.01
    assert any(p is model.head.bias for p in plain["params"]) and plain["weight_decay"] == 0.0
    assert all(p.dim() >= 2 for p in decayed["params"]) and all(p.dim() < 2 for p in plain["params"])


def test_learning_rate_warms_up_then_decays_linearly_to_zero():
    factors = [warmup_linear(step, 10, 2) for step in range(10)]
    assert factors[:3] == [0.5, 1.0, 1.0]
    assert factors[-1] == pytest.approx(1 / 8) and all(a > b for a, b in zip(factors[2:], factors[3:]))
    assert warmup_linear(10, 10, 2) == 0.0
    assert warmup_linear(0, 10, 0) == 1.0


# --- models per method -----------------------------------------------------------------------------------

def test_special_tokens_are_added_to_a_checkpoint_that_lacks_them(workspace):
    bpe = tiny_bpe()
    model = finetune.language_model(_method("full"), bpe.vocab_size, workspace / "pretrain", tiny_params().model)
    assert model.tokens_embed.weight.shape[0] == bpe.vocab_size
    with pytest.raises(UserError, match="token embeddings"):
        finetune.language_model(_method("full"), bpe.vocab_size - 5, workspace / "pretrain", tiny_params().model)


def test_transfer_layers_keeps_the_first_blocks_and_the_embeddings(workspace):
    bpe = tiny_bpe()
    pretrained = finetune.language_model(_method("full"), bpe.vocab_size, workspace / "pretrain", tiny_params().model)
    torch.manual_seed(0)
    partial = finetune.language_model(_method("full"), bpe.vocab_size, workspace / "pretrain", tiny_params().model, transfer_layers=1)
    kept, fresh = pretrained.state_dict(), partial.state_dict()
    for name in kept:
        if name.startswith("h.1."):
            continue
        # the appended special-token rows are random draws; everything pretrained must match
        torch.testing.assert_close(fresh[name][: bpe.vocab_size - 3], kept[name][: bpe.vocab_size - 3], msg=name)
    assert not torch.equal(fresh["h.1.attn.c_attn.weight"], kept["h.1.attn.c_attn.weight"])
    with pytest.raises(UserError, match="transfer_layers"):
        finetune.language_model(_method("full"), bpe.vocab_size, workspace / "pretrain", tiny_params().model, transfer_layers=3)
    with pytest.raises(UserError, match="transfer_layers"):
        finetune.language_model(_method("lstm"), bpe.vocab_size, workspace / "pretrain", tiny_params().model, transfer_layers=1)


def test_keeping_every_block_draws_nothing_so_it_is_the_full_run(workspace):
    """Figure 2 (left) reads k = n_layer from the finetune stage's full run: the two must start identically."""
    bpe, depth = tiny_bpe(), TINY_MODEL["n_layer"]
    model = finetune.language_model(_method("full"), bpe.vocab_size, workspace / "pretrain", tiny_params().model)
    weights = {name: value.clone() for name, value in model.state_dict().items()}
    before = torch.manual_seed(0).get_state()
    finetune_start.reinitialise_blocks(model, depth)
    assert torch.equal(torch.get_rng_state(), before)  # so the head's init and dropout draw the same numbers
    assert all(torch.equal(value, weights[name]) for name, value in model.state_dict().items())
    finetune_start.reinitialise_blocks(model, depth - 1)
    assert not torch.equal(torch.get_rng_state(), before)  # replacing a block does draw


def test_no_pretrain_needs_no_checkpoint_and_unknown_methods_are_refused(tmp_path):
    model = finetune.language_model(_method("no_pretrain"), 60, tmp_path, tiny_params().model)
    assert model.config.n_layer == 2 and model.config.vocab_size == 60
    with pytest.raises(UserError, match="unknown fine-tuning method 'bigger'; use one of full, no_pretrain"):
        _method("bigger")
    with pytest.raises(UserError, match="does not exist"):
        finetune.language_model(_method("full"), 60, tmp_path, tiny_params().model)


# --- data ---------------------------------------------------------------------------------------------------

def test_train_subsample_is_seeded_by_the_project_and_capped(workspace):
    params = tiny_params()
    first = load_task_data(Samples.of(params), "rt_polarity", workspace / "tasks")
    again = load_task_data(Samples.of(params), "rt_polarity", workspace / "tasks")
    assert len(first.splits["train"]) == 12 and first.splits == again.splits
    assert len(first.splits["dev"]) == len(first.splits["test"]) == 6
    assert first.full_sizes == {"train": 16, "dev": 8, "test": 8}


@pytest.mark.parametrize("rows, message", [
    ([], "empty"),
    ([ClassificationExample("fine", 5)], "outside the task's label set"),
])
def test_bad_task_files_stop_the_run_with_a_user_error(workspace, tmp_path, rows, message):
    tasks = tmp_path / "tasks"
    write_task(tasks / "rt_polarity", SPECS["rt_polarity"])
    write_examples(tasks / "rt_polarity" / "dev.jsonl", rows)
    with pytest.raises(UserError, match=message):
        finetune.run(finetune.FinetuneSettings.of(tiny_params()), tokens_of(tiny_params(), "rt_polarity", tasks, workspace / "bpe"),
                     _method("full"), 1,
                     pretrain_dir=workspace / "pretrain", out_dir=tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_multiple_choice_gold_index_out_of_range_is_a_user_error(workspace, tmp_path):
    tasks = tmp_path / "tasks"
    write_task(tasks / "social_iqa", SPECS["social_iqa"])
    write_examples(tasks / "social_iqa" / "train.jsonl", [MultipleChoiceExample("who?", ("a", "b"), 2)])
    with pytest.raises(UserError, match="outside the 2 choices"):
        load_task_data(Samples.of(tiny_params()), "social_iqa", tasks)


def test_examples_longer_than_the_context_are_truncated(workspace, tmp_path):
    tasks = tmp_path / "tasks"
    write_task(tasks / "snli_100k", SPECS["snli_100k"])
    long = " ".join(["word"] * 80)
    write_examples(tasks / "snli_100k" / "test.jsonl", [EntailmentExample(long, long, 1)] * 3)
    metrics = finetune.run(finetune.FinetuneSettings.of(tiny_params()), tokens_of(tiny_params(), "snli_100k", tasks, workspace / "bpe"),
                           _method("full"), 1,
                           pretrain_dir=workspace / "pretrain", out_dir=tmp_path / "out")
    assert 0.0 <= metrics["test"]["accuracy"] <= 1.0


def test_similarity_lm_loss_reads_the_first_order_only():
    model = tiny_task_model(SPECS["lee_similarity"]).eval()
    pair = EncodedExample(((40, 1, 2, 41, 3, 42), (40, 3, 41, 1, 2, 42)), 0.5)
    with torch.no_grad():
        _, language = model(collate([pair], regression=True), with_lm=True)
        first = collate([EncodedExample((pair.sequences[0],), 0)], regression=False)
        expected = lm_loss(model.language_model, model.language_model.hidden_states(first.input_ids), first)
    torch.testing.assert_close(language, expected)


def test_fine_tuning_learns_an_easy_task():
    """The whole loop (schedule, clipping, head, λ) fits a task where one token decides the label."""
    spec = SPECS["rt_polarity"]
    model = tiny_task_model(spec, classifier_dropout=0.1)
    examples = [EncodedExample(((40, 3 + i % 5, 10 + label, 6, 42),), label)
                for i in range(40) for label in (0, 1)]
    params = tiny_params(lr=3e-3, batch_size=8, epochs=8)
    finetune.train(model, examples, params.finetune, resolve("full", params), seed=1,
                   device=torch.device("cpu"))
    outputs = finetune_predict.predict(model, examples, 16, torch.device("cpu"))
    accuracy = sum(int(out.argmax()) == ex.label for out, ex in zip(outputs, examples)) / len(examples)
    assert accuracy == 1.0


def _rate(name: str, params) -> tuple[float, str]:
    method = resolve(name, params)
    return method.lr, method.rate_key


def test_the_random_init_method_trains_at_its_own_learning_rate():
    params = parse_params(tiny_raw_params(finetune={"lr": 5e-4}, methods={"no_pretrain": {"lr": 1e-3}}))
    assert _rate("no_pretrain", params) == (1e-3, "methods.no_pretrain.lr")
    assert {_rate(v, params) for v in ("full", "no_aux_lm", "lstm")} == {(5e-4, "finetune.lr")}
    # Unset (the paper profile): every method at finetune.lr, and a divergence names that key.
    params = parse_params(tiny_raw_params(finetune={"lr": 5e-4}, methods={"no_pretrain": {"lr": None}}))
    assert _rate("no_pretrain", params) == (5e-4, "finetune.lr")


def test_a_method_is_resolved_once_into_what_its_runs_need():
    """The stage hands the library one object: starting weights, λ, learning rate, card line."""
    params = parse_params(tiny_raw_params(finetune={"lr": 5e-4, "lm_coef": 0.5}, methods={"no_pretrain": {"lr": 1e-3}}))
    no_pretrain, no_aux_lm, lstm = (resolve(name, params) for name in ("no_pretrain", "no_aux_lm", "lstm"))
    assert (no_pretrain.starts_from, no_pretrain.pretrained, no_pretrain.lm_coef) == (None, False, 0.5)
    assert (no_aux_lm.starts_from, no_aux_lm.lm_coef, no_aux_lm.lr) == ("transformer", 0.0, 5e-4)
    assert lstm.starts_from == "lstm" and lstm.meaning == "pretrained LSTM, auxiliary LM objective"


def test_a_method_added_to_the_params_runs_through_finetune_evaluate_and_ablation(workspace, tmp_path):
    """A Table 5 method is an entry of params' `methods`: adding one (here a random-init Transformer without the
    auxiliary objective) and naming it in finetune.methods is all it takes to train, score and tabulate it."""
    import pandas as pd

    from gpt1 import layout
    from gpt1.stages import baselines, evaluate
    from gpt1.stages.ablation import run_ablation

    entry = {"label": "Transformer w/o pre-training or aux LM", "starts_from": None, "auxiliary_lm": False,
             "meaning": "randomly initialised Transformer, no auxiliary LM objective", "lr": None, "finding": "",
             "finding_by_size": False}
    tasks = ["snli_100k", "social_iqa"]
    params = parse_params(tiny_raw_params(data={"tasks": tasks}, methods={"no_pretrain_no_aux": entry}, finetune=dict(
        methods=["full", "no_pretrain_no_aux"], seeds=[1, 2], lr=1e-3, batch_size=4, epochs=1, max_train_examples=12,
        max_eval_examples=6, device="cpu", dtype="float32")))
    results = tmp_path / "results"
    for task in tasks:
        for method in params.finetune.methods:
            finetune.run_seeds(finetune.FinetuneSettings.of(params), tokens_of(params, task, workspace / "tasks", workspace / "bpe"),
                               resolve(method, params),
                               params.finetune.seeds, pretrain_dir=workspace / "pretrain",
                               out_root=layout.finetune_runs(task, method, results))
    baselines.run(params, workspace / "tasks", results / "baselines.json")
    evaluate.run(params, results, workspace / "tasks")
    run_ablation(results, workspace / "tasks", tasks, params.finetune.seeds, params.finetune.max_train_examples,
                 {name: params.methods[name] for name in params.finetune.methods})

    card = (layout.finetune_run("snli_100k", "no_pretrain_no_aux", 2, results) / "model_card.md").read_text()
    assert "randomly initialised Transformer, no auxiliary LM objective" in card and "used: 0;" in card
    assert "pretrained layers transferred: none" in card
    assert list(pd.read_csv(results / "ablation.csv", index_col="method").index) == ["full", "no_pretrain_no_aux"]
    intervals = pd.read_csv(results / "ablation_intervals.csv")
    assert set(intervals.comparison) == {"full - no_pretrain_no_aux", "full - majority class",
                                         "no_pretrain_no_aux - majority class"}
    table = (results / "ablation.md").read_text()
    assert table.count("| Transformer w/o pre-training or aux LM |") == 3  # the means, the intervals, the majority
