"""Zero-shot heuristics (Figure 2, right): tiny random checkpoints, tiny task files, a character-level BPE."""

from __future__ import annotations

import json
import math
import string
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from gpt1 import zeroshot
from gpt1.bpe import END_OF_WORD, Gpt1Bpe
from gpt1.config import load_params
from gpt1.errors import UserError
from gpt1.model import build_model, save_model
from gpt1.records import ClassificationExample, MultipleChoiceExample, TaskSpec, write_examples
from gpt1.zeroshot import Candidate, ZeroShotTask

REPO = Path(__file__).resolve().parents[1]
CHARACTERS = sorted(set(string.ascii_lowercase + ".,?'!-\n"))
MAX_STEPS = 8
REVIEWS = [
    ClassificationExample("a fine and moving film.", 1),
    ClassificationExample("dull, dull, dull.", 0),
    ClassificationExample("i loved every minute of it, and so will you, whatever you think of the director.", 1),
    ClassificationExample("it works.", 1),
]
QUESTIONS = [
    MultipleChoiceExample("kai went to the shop. what will kai do next?", ("buy milk", "sleep", "fly"), 0),
    MultipleChoiceExample("jo lost the game. how would jo feel?", ("happy", "sad", "tall"), 1),
]
PAIRS = [
    {"input": "the keys to the cabinet ", "target_scores": {"are here.": 1, "is here.": 0}},
    {"input": "the dog ", "target_scores": {"runs.": 1, "run.": 0}},
    {"input": "the authors of the book ", "target_scores": {"write well.": 1, "writes well.": 0}},
    {"input": "the nose ", "target_scores": {"is big.": 0}},  # collapsed, as one example of the real file
]


@pytest.fixture(scope="module")
def bpe() -> Gpt1Bpe:
    """Characters only, no merges: every word is several tokens, so products of probabilities get tested."""
    return Gpt1Bpe.from_merges(CHARACTERS + [c + END_OF_WORD for c in CHARACTERS], [])


def params(max_eval_examples=None):
    base = load_params(REPO / "params.yaml")
    return base.model_copy(update={
        "finetune": base.finetune.model_copy(update={"max_eval_examples": max_eval_examples, "device": "cpu"}),
        "pretrain": base.pretrain.model_copy(update={"max_steps": MAX_STEPS}),
    })


def tiny_model(kind: str, vocab_size: int, seed: int):
    torch.manual_seed(seed)
    if kind == "transformer":
        config = dict(vocab_size=vocab_size, n_positions=32, n_layer=1, n_head=2, d_model=16, d_ff=32)
    else:
        config = dict(vocab_size=vocab_size, d_embed=16, d_hidden=16)
    return build_model(kind, config).eval()


@pytest.fixture(scope="module")
def project(tmp_path_factory, bpe) -> SimpleNamespace:
    root = tmp_path_factory.mktemp("zeroshot")
    bpe.save(root / "bpe")
    for name, family, labels, examples in [("rt_polarity", "classification", ("negative", "positive"), REVIEWS),
                                           ("social_iqa", "multiple_choice", (), QUESTIONS)]:
        spec = TaskSpec(name=name, family=family, labels=labels, metrics=("accuracy",), source="test")
        (root / "tasks" / name).mkdir(parents=True)
        (root / "tasks" / name / "task.json").write_text(spec.to_json())
        write_examples(root / "tasks" / name / "test.jsonl", examples)
    agreement = root / "raw" / zeroshot.AGREEMENT_FILE
    agreement.parent.mkdir(parents=True)
    agreement.write_text(json.dumps({"name": "tse-easy", "examples": PAIRS}))
    for kind in ("transformer", "lstm"):
        for step in (1, 2, 4):
            save_model(tiny_model(kind, bpe.vocab_size, step), root / "pretrain" / kind / "checkpoints" /
                       f"step_{step}.safetensors")
    save_model(tiny_model("transformer", bpe.vocab_size, 99), root / "pretrain" / "transformer" / "model.safetensors")
    scores = root / "scores.csv"
    pd.DataFrame([("rt_polarity", "full", 1, "accuracy", 0.8), ("rt_polarity", "full", 2, "accuracy", 0.9),
                  ("rt_polarity", "lstm", 1, "accuracy", 0.87), ("social_iqa", "full", 1, "accuracy", 0.5),
                  ("social_iqa", "full", 1, "f1", 0.99)],
                 columns=["task", "variant", "seed", "metric", "value"]).to_csv(scores, index=False)
    return SimpleNamespace(root=root, scores=scores)


def run_stage(project, out: str, max_eval_examples=None, scores="default") -> tuple[pd.DataFrame, Path, Path]:
    root = project.root
    out_csv, out_png = root / out / "zero_shot.csv", root / out / "zero_shot.png"
    zeroshot.run(params(max_eval_examples), tasks_dir=root / "tasks", raw_dir=root / "raw", bpe_dir=root / "bpe",
                 pretrain_dir=root / "pretrain", out_csv=out_csv, out_png=out_png,
                 finetuned_scores=project.scores if scores == "default" else scores, batch_size=3)
    return pd.read_csv(out_csv), out_csv, out_png


class UnigramLM(nn.Module):
    """Next-token log-probabilities that ignore the context: log_softmax(logits) at every position."""

    def __init__(self, logits: torch.Tensor):
        super().__init__()
        self.logits = logits
        self.config = SimpleNamespace(n_positions=64)

    def hidden_states(self, input_ids):
        return torch.zeros(*input_ids.shape, 1)

    def lm_logits(self, hidden):
        return self.logits.expand(*hidden.shape[:-1], -1)


# --- the stage ---------------------------------------------------------------------------------------


def test_run_writes_one_row_per_checkpoint_and_task(project):
    table, _, out_png = run_stage(project, "first")
    assert list(table.columns) == zeroshot.COLUMNS
    # transformer: steps 1, 2, 4 and the final model as max_steps; lstm has no final model
    expected = {("transformer", s) for s in (1, 2, 4, MAX_STEPS)} | {("lstm", s) for s in (1, 2, 4)}
    assert set(zip(table["model"], table["step"])) == expected
    assert len(table) == len(expected) * 3
    assert table.groupby("task").size().to_dict() == {"agreement": 7, "rt_polarity": 7, "social_iqa": 7}
    examples = table.groupby("task")["examples"].first().to_dict()
    assert examples == {"rt_polarity": 4, "agreement": 3, "social_iqa": 2}  # the collapsed pair is dropped
    chance = table.groupby("task")["chance"].first().to_dict()
    assert chance["rt_polarity"] == 0.5 and chance["agreement"] == 0.5
    assert chance["social_iqa"] == pytest.approx(1 / 3, abs=1e-6)
    correct = table["score"] * table["examples"]
    assert np.allclose(correct, correct.round(), atol=1e-4)  # accuracies: whole examples right
    normaliser = table.groupby("task")["normaliser"].first().to_dict()
    # rt_polarity: lstm 0.87 beats full's mean over seeds (0.8 + 0.9) / 2 = 0.85
    assert normaliser == {"rt_polarity": 0.87, "social_iqa": 0.5, "agreement": 1.0}
    assert table.loc[table["task"] == "agreement", "normaliser_source"].str.contains("perfect").all()
    recomputed = (table["score"] - table["chance"]) / (table["normaliser"] - table["chance"])
    assert np.allclose(table["normalised"], recomputed, atol=1e-5)
    assert out_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_two_runs_write_identical_bytes(project):
    _, csv_a, png_a = run_stage(project, "a")
    _, csv_b, png_b = run_stage(project, "b")
    assert csv_a.read_bytes() == csv_b.read_bytes()
    assert png_a.read_bytes() == png_b.read_bytes()


def test_max_eval_examples_caps_every_task_and_missing_scores_normalise_by_one(project, tmp_path):
    table, _, _ = run_stage(project, "capped", max_eval_examples=2, scores=tmp_path / "absent.csv")
    assert set(table["examples"]) == {2}
    assert set(table["normaliser"]) == {1.0}
    assert table["normaliser_source"].str.contains("missing").sum() == 14  # both fine-tuned tasks, 7 checkpoints


# --- normalisation -------------------------------------------------------------------------------------


def test_normaliser_is_the_best_variant_mean_over_seeds(project, tmp_path):
    binary = ZeroShotTask("rt_polarity", "SST-2", 0.5, False, (), ())
    assert zeroshot.best_finetuned(project.scores, "rt_polarity") == (pytest.approx(0.87), "lstm")
    value, source = zeroshot.normaliser_for(binary, project.scores)
    assert value == pytest.approx(0.87) and "lstm" in source
    assert zeroshot.normalise(0.685, 0.5, 0.87) == pytest.approx(0.5)
    assert zeroshot.normalise(0.5, 0.5, 0.87) == 0.0
    assert zeroshot.normalise(0.87, 0.5, 0.87) == pytest.approx(1.0)
    # social_iqa's best (0.5) is above chance 1/3; its f1 row is ignored
    choice = ZeroShotTask("social_iqa", "RACE", 1 / 3, True, (), ())
    assert zeroshot.normaliser_for(choice, project.scores)[0] == pytest.approx(0.5)
    assert zeroshot.normalise(5 / 12, 1 / 3, 0.5) == pytest.approx(0.5)
    # no row, no file, or a fine-tuned score at chance: a perfect score is the normaliser
    assert zeroshot.normaliser_for(ZeroShotTask("other", "", 0.5, True, (), ()), project.scores)[0] == 1.0
    assert zeroshot.normaliser_for(binary, None)[0] == 1.0
    at_chance = tmp_path / "chance.csv"
    at_chance.write_text("task,variant,seed,metric,value\nrt_polarity,full,1,accuracy,0.5\n")
    value, source = zeroshot.normaliser_for(binary, at_chance)
    assert value == 1.0 and "not above chance" in source
    bad = tmp_path / "bad.csv"
    bad.write_text("task,value\nrt_polarity,0.9\n")
    with pytest.raises(UserError, match="lacks the column"):
        zeroshot.best_finetuned(bad, "rt_polarity")


# --- heuristics ----------------------------------------------------------------------------------------


def boosted(bpe: Gpt1Bpe, token: str, amount: float = 5.0) -> UnigramLM:
    logits = torch.zeros(bpe.vocab_size)
    logits[bpe.encoder[token]] = amount
    return UnigramLM(logits)


def test_very_heuristic_picks_the_more_probable_label_word(bpe):
    task = zeroshot.sentiment_task(REVIEWS, ("negative", "positive"), bpe)
    very = tuple(bpe.encode("very"))
    assert all(c.context[-len(very):] == very for cs in task.candidates for c in cs)
    # "positive" and "negative" share t, i, v, e</w>; "p" occurs only in "positive", "g" only in "negative"
    assert zeroshot.evaluate(boosted(bpe, "p"), task, 64) == 0.75  # always "positive": 3 of 4 reviews
    assert zeroshot.evaluate(boosted(bpe, "g"), task, 64) == 0.25  # always "negative"


def test_multi_token_label_words_score_the_product_of_their_token_probabilities(bpe):
    # Uniform next-token probabilities: a product favours the shorter word, an average would tie (= wrong).
    uniform = UnigramLM(torch.zeros(bpe.vocab_size))
    short_wins = zeroshot.sentiment_task([ClassificationExample("ok", 1)], ("ab", "c"), bpe)
    assert [len(c.continuation) for c in short_wins.candidates[0]] == [2, 1]
    assert zeroshot.evaluate(uniform, short_wins, 64) == 1.0
    long_loses = zeroshot.sentiment_task([ClassificationExample("ok", 0)], ("ab", "c"), bpe)
    assert zeroshot.evaluate(uniform, long_loses, 64) == 0.0


def test_multiple_choice_scores_only_the_answer_tokens(bpe):
    logits = torch.linspace(-3, 3, bpe.vocab_size)
    log_probs = F.log_softmax(logits, dim=-1)
    candidate = Candidate(context=(1, 2, 3, 4), continuation=(5, 6))
    summed, count = zeroshot.score_candidates(UnigramLM(logits), [candidate], max_positions=64)[0]
    assert count == 2
    assert summed == pytest.approx(float(log_probs[5] + log_probs[6]), abs=1e-5)
    task = zeroshot.choice_task(QUESTIONS, bpe)
    start = zeroshot.document_start(bpe)
    for example, candidates in zip(QUESTIONS, task.candidates):
        assert [c.continuation for c in candidates] == [tuple(bpe.encode(choice)) for choice in example.choices]
        assert {c.context for c in candidates} == {start + tuple(bpe.encode(example.context))}


def test_answer_letters_decide_multiple_choice(bpe):
    task = zeroshot.choice_task(QUESTIONS, bpe)
    logits = torch.zeros(bpe.vocab_size)
    logits[bpe.encoder["u"]] = 6.0  # only "buy milk" has a "u"
    logits[bpe.encoder["d" + END_OF_WORD]] = 6.0  # only "sad" ends in "d"
    assert zeroshot.evaluate(UnigramLM(logits), task, 64) == 1.0
    logits = torch.zeros(bpe.vocab_size)
    logits[bpe.encoder["f"]] = 6.0  # "fly" (wrong) wins the first question
    logits[bpe.encoder["t"]] = 6.0  # "tall" (wrong) wins the second
    assert zeroshot.evaluate(UnigramLM(logits), task, 64) == 0.0


def test_agreement_compares_average_log_probabilities_and_drops_broken_pairs(project, bpe):
    pairs = zeroshot.read_agreement(project.root / "raw" / zeroshot.AGREEMENT_FILE)
    assert pairs[1] == ("the dog runs.", "the dog run.")
    assert len(pairs) == 3
    task = zeroshot.agreement_task(pairs, bpe)
    assert task.average and task.labels == (0, 0, 0)
    # "s" boosted: "runs" beats "run", but "is" and "writes" beat "are" and "write": 1 of 3 right
    assert zeroshot.evaluate(boosted(bpe, "s" + END_OF_WORD), task, 64) == pytest.approx(1 / 3)
    with pytest.raises(UserError, match="gpt1 download"):
        zeroshot.read_agreement(project.root / "absent.json")


def test_a_tie_counts_as_wrong():
    task = ZeroShotTask("t", "", 0.5, False, ((Candidate((1,), (2,)), Candidate((1,), (3,))),), (0,))
    assert zeroshot.accuracy(task, np.array([[-1.0, 1], [-1.0, 1]])) == 0.0
    assert zeroshot.accuracy(task, np.array([[-0.5, 1], [-1.0, 1]])) == 1.0


# --- scoring with real models ------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["transformer", "lstm"])
def test_padding_and_batching_match_an_unpadded_forward_pass(bpe, kind):
    model = tiny_model(kind, bpe.vocab_size, 7)
    candidates = [Candidate(tuple(range(10, 10 + n)), tuple(range(40, 40 + m))) for n, m in [(1, 3), (6, 2), (3, 5)]]
    batched = zeroshot.score_candidates(model, candidates, max_positions=32, batch_size=3)
    single = zeroshot.score_candidates(model, candidates, max_positions=32, batch_size=1)
    assert np.allclose(batched, single, atol=1e-5)
    for candidate, (summed, count) in zip(candidates, batched):
        ids = torch.tensor([candidate.context + candidate.continuation])
        with torch.no_grad():
            log_probs = F.log_softmax(model(ids[:, :-1]), dim=-1)[0]
        first = len(candidate.context) - 1  # the position that predicts the first continuation token
        expected = sum(float(log_probs[t, ids[0, t + 1]]) for t in range(first, ids.shape[1] - 1))
        assert count == len(candidate.continuation)
        assert summed == pytest.approx(expected, abs=1e-4)


def test_long_contexts_are_cut_from_the_left(bpe):
    model = tiny_model("transformer", bpe.vocab_size, 3)  # 32 positions
    long = Candidate(tuple(range(5, 55)), (60, 61))
    cut = Candidate(tuple(range(55 - 31, 55)), (60, 61))  # 31 context + 2 continuation = 33 ids, 32 inputs
    assert zeroshot._fit(long, 32) == (cut.context + cut.continuation, 31)
    scores = zeroshot.score_candidates(model, [long, cut], max_positions=32)
    assert np.allclose(scores[0], scores[1], atol=1e-5)
    assert not math.isnan(scores[0, 0])


# --- checkpoints -----------------------------------------------------------------------------------------


def test_checkpoints_are_sorted_and_the_final_model_is_the_last_step(tmp_path):
    folder = tmp_path / "transformer" / "checkpoints"
    folder.mkdir(parents=True)
    for name in ("step_10.safetensors", "step_2.safetensors", "step_x.safetensors", "notes.txt"):
        (folder / name).write_bytes(b"")
    (tmp_path / "transformer" / "model.safetensors").write_bytes(b"")
    found = zeroshot.find_checkpoints(tmp_path, "transformer", final_step=100)
    assert [step for step, _ in found] == [2, 10, 100]
    assert found[-1][1].name == "model.safetensors"
    (folder / "step_100.safetensors").write_bytes(b"")
    found = zeroshot.find_checkpoints(tmp_path, "transformer", final_step=100)
    assert [(step, path.name) for step, path in found][-1] == (100, "step_100.safetensors")
    with pytest.raises(UserError, match="gpt1 pretrain"):
        zeroshot.find_checkpoints(tmp_path, "lstm", final_step=100)
