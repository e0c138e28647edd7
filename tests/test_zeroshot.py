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

from gpt1.eval import zeroshot, zeroshot_tasks
from gpt1.stages import encode_zeroshot as encode_stage, zeroshot as zeroshot_stage
from gpt1.eval import zeroshot_scoring as scoring
from gpt1.tokenizer.bpe import END_OF_WORD, Gpt1Bpe
from gpt1.params.schema import load_params
from gpt1.layout import Results
from gpt1.errors import UserError
from gpt1.model.lm import build_model, save_model
from gpt1.data.records import ClassificationExample, MultipleChoiceExample, TaskSpec, write_examples
from gpt1.eval.zeroshot_candidates import Candidate, ZeroShotTask, write_tasks

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
    agreement = root / "raw" / zeroshot_tasks.AGREEMENT_FILE
    agreement.parent.mkdir(parents=True)
    agreement.write_text(json.dumps({"name": "tse-easy", "examples": PAIRS}))
    for kind in ("transformer", "lstm"):
        for step in (1, 2, 4):
            save_model(tiny_model(kind, bpe.vocab_size, step), root / "pretrain" / kind / "checkpoints" /
                       f"step_{step}.safetensors")
    save_model(tiny_model("transformer", bpe.vocab_size, 99), root / "pretrain" / "transformer" / "model.safetensors")
    return SimpleNamespace(root=root)


def run_stage(project, out: str, max_eval_examples=None, tasks_dir=None) -> SimpleNamespace:
    root = project.root
    folder = root / out
    candidates = folder / "candidates.json"
    encode_stage.run(params(max_eval_examples), tasks_dir=tasks_dir or root / "tasks", raw_dir=root / "raw",
                     bpe_dir=root / "bpe", out=candidates)
    zeroshot_stage.run(params(max_eval_examples), candidates, pretrain_dir=root / "pretrain", results=Results(folder),
                       batch_size=3)
    return SimpleNamespace(table=pd.read_csv(folder / "zero_shot.csv"), csv=folder / "zero_shot.csv",
                           png=folder / "zero_shot.png", trend=folder / "zero_shot_trend.csv")


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
    table = run_stage(project, "first").table
    assert list(table.columns) == zeroshot.COLUMNS
    # transformer: steps 1, 2, 4 and the final model as max_steps; lstm has no final model
    expected = {("transformer", s) for s in (1, 2, 4, MAX_STEPS)} | {("lstm", s) for s in (1, 2, 4)}
    assert set(zip(table["model"], table["step"])) == expected
    assert len(table) == len(expected) * 5
    assert table.groupby("task").size().to_dict() == {"agreement": 7, "agreement_total": 7, "rt_polarity": 7,
                                                      "rt_polarity_pmi": 7, "social_iqa": 7}
    examples = table.groupby("task")["examples"].first().to_dict()
    # the collapsed pair is dropped
    assert examples == {"rt_polarity": 4, "rt_polarity_pmi": 4, "agreement": 3, "agreement_total": 3, "social_iqa": 2}
    chance = table.groupby("task")["chance"].first().to_dict()
    assert chance["rt_polarity"] == chance["rt_polarity_pmi"] == chance["agreement"] == 0.5
    assert chance["social_iqa"] == pytest.approx(1 / 3, abs=1e-6)
    correct = table["score"] * table["examples"]
    assert np.allclose(correct, correct.round(), atol=1e-4)  # accuracies: whole examples right
    binomial = np.sqrt(table["score"] * (1 - table["score"]) / table["examples"])
    assert np.allclose(table["se"], binomial, atol=1e-5)


def test_run_writes_the_trend_table(project):
    trend = pd.read_csv(run_stage(project, "trend").trend)
    assert list(trend.columns) == zeroshot.TREND_COLUMNS
    assert len(trend) == 2 * 5  # two models, five heuristics
    assert set(trend["first_step"]) == {1} and set(trend["last_step"]) == {4, MAX_STEPS}
    assert np.allclose(trend["difference"], trend["last"] - trend["first"], atol=1e-5)


def test_two_runs_write_identical_bytes(project):
    a, b = run_stage(project, "a"), run_stage(project, "b")
    for name in ("csv", "png", "trend"):
        assert getattr(a, name).read_bytes() == getattr(b, name).read_bytes()


def test_max_eval_examples_caps_every_task(project):
    table = run_stage(project, "capped", max_eval_examples=2).table
    assert set(table["examples"]) == {2}


def test_figure_has_one_panel_per_heuristic_and_is_not_blank(project):
    from matplotlib.image import imread

    out_png = run_stage(project, "figure").png
    assert out_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pixels = imread(out_png)
    width, height = zeroshot.PANEL_INCHES
    assert pixels.shape[:2] == (round(height * zeroshot.DPI), round(5 * width * zeroshot.DPI))
    colours = np.unique(pixels.reshape(-1, pixels.shape[-1]).round(3), axis=0)
    assert len(colours) > 10  # white, black text, two line colours, their bands, grey chance lines, ...


def test_heuristics_follow_the_selected_tasks_and_none_at_all_is_an_error(project, bpe, tmp_path):
    tasks_dir, raw_dir = project.root / "tasks", project.root / "raw"
    chosen = zeroshot_tasks.load_tasks(bpe, tasks_dir, raw_dir, ["social_iqa"], None, 0)
    assert [task.name for task in chosen] == ["agreement", "agreement_total", "social_iqa"]
    every = zeroshot_tasks.load_tasks(bpe, tasks_dir, raw_dir, ["social_iqa", "snli_100k", "rt_polarity"], None, 0)
    assert [task.name for task in every] == ["rt_polarity", "rt_polarity_pmi", "agreement", "agreement_total",
                                             "social_iqa"]
    assert zeroshot_tasks.load_tasks(bpe, tasks_dir, tmp_path / "absent", ["snli_100k"], None, 0) == []
    write_tasks(tmp_path / "none.json", [])
    with pytest.raises(UserError, match="no zero-shot heuristic has data"):
        zeroshot_stage.run(params(None), tmp_path / "none.json", pretrain_dir=project.root / "pretrain",
                           results=Results(tmp_path / "results"))
    with pytest.raises(UserError, match=r"sst2 has no task.json/test.jsonl; run `gpt1 prepare`"):
        zeroshot_tasks.load_tasks(bpe, tasks_dir, raw_dir, ["sst2"], None, 0)


def _prepared(root: Path, name: str, family: str, labels: tuple[str, ...], splits: dict[str, list]) -> None:
    spec = TaskSpec(name=name, family=family, labels=labels, metrics=("accuracy",), source="test")
    (root / name).mkdir(parents=True)
    (root / name / "task.json").write_text(spec.to_json())
    for split, examples in splits.items():
        write_examples(root / name / f"{split}.jsonl", examples)


def test_the_paper_profiles_tasks_bring_their_heuristics(bpe, tmp_path):
    """CoLA -> thresholded acceptability, SST-2 -> " very", RACE and Story Cloze -> most probable answer; the
    paper profile downloads no agreement pairs, and its zero-shot stage runs on these alone."""
    sentences = [ClassificationExample("the dog runs.", 1), ClassificationExample("dog the runs.", 0),
                 ClassificationExample("it is here.", 1)]
    _prepared(tmp_path, "cola", "classification", ("unacceptable", "acceptable"),
              {"train": sentences, "test": sentences})
    _prepared(tmp_path, "sst2", "classification", ("negative", "positive"), {"test": REVIEWS})
    for name in ("race", "story_cloze"):
        _prepared(tmp_path, name, "multiple_choice", (), {"test": QUESTIONS})
    chosen = zeroshot_tasks.load_tasks(bpe, tmp_path, tmp_path / "no_raw",
                                       ["race", "cola", "mnli", "sst2", "story_cloze"], None, 0)
    assert [(task.name, task.stands_for) for task in chosen] == [
        ("sst2", "SST-2"), ("sst2_pmi", "SST-2, PMI"), ("cola", "CoLA"), ("race", "RACE"), ("story_cloze", "RACE")]
    assert chosen[1].candidates == chosen[0].candidates and len(chosen[0].candidates) == len(REVIEWS)
    cola = chosen[2]
    assert cola.accept_share == pytest.approx(2 / 3) and cola.labels == (1, 0, 1)
    assert cola.chance == pytest.approx(2 / 3 * 2 / 3 + 1 / 3 * 1 / 3)


def test_the_candidates_file_gives_back_every_task_as_built_and_the_scoring_stage_needs_no_bpe(project, bpe, tmp_path):
    """encode-zeroshot writes what load_tasks built, field for field; the zeroshot stage reads only that file, so
    neither the BPE nor spaCy is in its imports (a GPU machine's bundle leaves spaCy out)."""
    from gpt1.eval.zeroshot_candidates import read_tasks
    from gpt1.pipeline import code_deps

    built = zeroshot_tasks.load_tasks(bpe, project.root / "tasks", project.root / "raw",
                                      ["rt_polarity", "social_iqa"], None, 0)
    write_tasks(tmp_path / "tasks.json", built)
    assert read_tasks(tmp_path / "tasks.json") == built and any(task.unconditional for task in built)
    (tmp_path / "old.json").write_text('{"format": 0, "tasks": []}')
    with pytest.raises(ValueError, match="run `gpt1 encode-zeroshot` again"):
        read_tasks(tmp_path / "old.json")
    scoring = code_deps.closure(REPO, "stages.zeroshot")
    assert "tokenizer.bpe" not in scoring and not any(module.startswith("data.") for module in scoring)


def test_acceptability_calls_the_best_scored_share_acceptable(bpe):
    task = zeroshot_tasks.acceptability_task(
        [ClassificationExample(text, label) for text, label in [("a", 1), ("b", 0), ("c", 1), ("d", 0)]], 0.5, bpe)
    # per example: (summed log-prob, tokens); averages -1, -2, -3, -4: "a" and "b" are called acceptable
    summed = np.array([[-1.0, 1], [-4.0, 2], [-9.0, 3], [-16.0, 4]])
    assert scoring.accuracy(task, summed) == 0.5
    summed[2] = [-0.5, 1]  # now "a" and "c", the acceptable ones, score best
    assert scoring.accuracy(task, summed) == 1.0
    tied = np.array([[-1.0, 1]] * 4)  # equal scores: the earlier examples go first, no coin flips
    assert scoring.accuracy(task, tied) == 0.5


# --- rising over pretraining -------------------------------------------------------------------------


def scores_over(steps, accuracies, examples) -> pd.DataFrame:
    table = pd.DataFrame({"model": "transformer", "step": steps, "task": "t", "examples": examples,
                          "score": accuracies, "chance": 0.5})
    table["se"] = zeroshot.standard_error(table["score"], table["examples"])
    return table


def test_a_clear_rise_is_flagged():
    row = zeroshot.trend(scores_over([1, 10, 100, 1000], [0.50, 0.56, 0.63, 0.70], 1000)).iloc[0]
    # se = sqrt(0.5 * 0.5 / 1000 + 0.7 * 0.3 / 1000) = sqrt(0.00046) = 0.021448; z = 0.2 / 0.021448 = 9.325
    assert row["se"] == pytest.approx(0.021448, abs=1e-6)
    assert row["z"] == pytest.approx(9.325, abs=1e-3)
    assert row["spearman"] == pytest.approx(1.0)
    assert (row["first_step"], row["last_step"], row["direction"]) == (1, 1000, "rises")
    assert row["noise"] == "test examples only (one pretraining run)"


def test_noise_is_not_a_rise():
    row = zeroshot.trend(scores_over([1, 10, 100], [0.50, 0.51, 0.52], 200)).iloc[0]
    # se = sqrt(0.5 * 0.5 / 200 + 0.52 * 0.48 / 200) = sqrt(0.002498) = 0.049980; z = 0.02 / 0.04998 = 0.400
    assert row["z"] == pytest.approx(0.400, abs=1e-3)
    assert row["spearman"] == pytest.approx(1.0)  # monotone, yet within the noise
    assert row["direction"] == "flat"


def test_a_clear_fall_is_called_a_fall_not_a_missing_rise():
    row = zeroshot.trend(scores_over([1, 10, 100, 1000], [0.57, 0.50, 0.45, 0.40], 500)).iloc[0]
    assert row["z"] < -1.96 and row["direction"] == "falls"


def test_the_direction_is_the_ends_and_spearman_says_how_steady_the_way_was():
    row = zeroshot.trend(scores_over([1, 10, 100, 1000, 10000], [0.50, 0.80, 0.40, 0.45, 0.70], 1000)).iloc[0]
    assert row["z"] > 1.96 and row["spearman"] == pytest.approx(-0.1)  # ranks 3, 5, 1, 2, 4: 1 - 6 * 22 / 120
    assert row["direction"] == "rises"  # higher at the end beyond the noise, by an erratic way


def test_a_flat_curve_has_no_spearman_and_is_flat():
    row = zeroshot.trend(scores_over([1, 10], [0.0, 0.0], 100)).iloc[0]
    assert row["z"] == 0.0 and math.isnan(row["spearman"]) and row["direction"] == "flat"


# --- heuristics ----------------------------------------------------------------------------------------


def boosted(bpe: Gpt1Bpe, token: str, amount: float = 5.0) -> UnigramLM:
    logits = torch.zeros(bpe.vocab_size)
    logits[bpe.encoder[token]] = amount
    return UnigramLM(logits)


def test_very_heuristic_picks_the_more_probable_label_word(bpe):
    task = zeroshot_tasks.sentiment_task(REVIEWS, ("negative", "positive"), bpe)
    very = tuple(bpe.encode("very"))
    assert all(c.context[-len(very):] == very for cs in task.candidates for c in cs)
    # "positive" and "negative" share t, i, v, e</w>; "p" occurs only in "positive", "g" only in "negative"
    assert scoring.evaluate(boosted(bpe, "p"), task, 64) == 0.75  # always "positive": 3 of 4 reviews
    assert scoring.evaluate(boosted(bpe, "g"), task, 64) == 0.25  # always "negative"


def test_pmi_subtracts_the_unconditional_log_probability_of_each_label_word(bpe):
    model = tiny_model("transformer", bpe.vocab_size, 5)
    raw = zeroshot_tasks.sentiment_task(REVIEWS, ("negative", "positive"), bpe)
    pmi = zeroshot_tasks.sentiment_task(REVIEWS, ("negative", "positive"), bpe, calibrated=True)
    assert (pmi.name, pmi.chance, pmi.candidates) == ("sentiment_pmi", 0.5, raw.candidates)
    raw_scores, pmi_scores = (scoring.candidate_scores(task, scoring.score_candidates(
        model, scoring.task_candidates(task), 32)) for task in (raw, pmi))
    # log P(word | document start, "very"), computed here from the model's own next-token log-probabilities
    very = bpe.document_start() + tuple(bpe.encode("very"))
    unconditional = []
    for word in ("negative", "positive"):
        ids = torch.tensor([very + tuple(bpe.encode(word))])
        with torch.no_grad():
            log_probs = F.log_softmax(model(ids[:, :-1]), dim=-1)[0]
        unconditional.append(sum(float(log_probs[t, ids[0, t + 1]]) for t in range(len(very) - 1, ids.shape[1] - 1)))
    assert np.allclose(raw_scores - pmi_scores, np.tile(unconditional, len(REVIEWS)), atol=1e-4)
    assert not np.allclose(unconditional, 0)
    # scored together, the shared candidates give each task the accuracy it gets alone
    together = scoring.evaluate_many(model, [raw, pmi], 32, batch_size=2)
    assert together == [scoring.evaluate(model, raw, 32), scoring.evaluate(model, pmi, 32)]


def test_pmi_undoes_a_prior_for_one_label_word(bpe):
    # A context-free preference for "p" makes the exact heuristic always say "positive"; PMI cancels it: tie.
    pmi = zeroshot_tasks.sentiment_task(REVIEWS, ("negative", "positive"), bpe, calibrated=True)
    assert scoring.evaluate(boosted(bpe, "p"), pmi, 64) == 0.0


def test_multi_token_label_words_score_the_product_of_their_token_probabilities(bpe):
    # Uniform next-token probabilities: a product favours the shorter word, an average would tie (= wrong).
    uniform = UnigramLM(torch.zeros(bpe.vocab_size))
    short_wins = zeroshot_tasks.sentiment_task([ClassificationExample("ok", 1)], ("ab", "c"), bpe)
    assert [len(c.continuation) for c in short_wins.candidates[0]] == [2, 1]
    assert scoring.evaluate(uniform, short_wins, 64) == 1.0
    long_loses = zeroshot_tasks.sentiment_task([ClassificationExample("ok", 0)], ("ab", "c"), bpe)
    assert scoring.evaluate(uniform, long_loses, 64) == 0.0


def test_multiple_choice_scores_only_the_answer_tokens(bpe):
    logits = torch.linspace(-3, 3, bpe.vocab_size)
    log_probs = F.log_softmax(logits, dim=-1)
    candidate = Candidate(context=(1, 2, 3, 4), continuation=(5, 6))
    summed, count = scoring.score_candidates(UnigramLM(logits), [candidate], max_positions=64)[0]
    assert count == 2
    assert summed == pytest.approx(float(log_probs[5] + log_probs[6]), abs=1e-5)
    task = zeroshot_tasks.choice_task(QUESTIONS, bpe)
    start = bpe.document_start()
    for example, candidates in zip(QUESTIONS, task.candidates):
        assert [c.continuation for c in candidates] == [tuple(bpe.encode(choice)) for choice in example.choices]
        assert {c.context for c in candidates} == {start + tuple(bpe.encode(example.context))}


def test_answer_letters_decide_multiple_choice(bpe):
    task = zeroshot_tasks.choice_task(QUESTIONS, bpe)
    logits = torch.zeros(bpe.vocab_size)
    logits[bpe.encoder["u"]] = 6.0  # only "buy milk" has a "u"
    logits[bpe.encoder["d" + END_OF_WORD]] = 6.0  # only "sad" ends in "d"
    assert scoring.evaluate(UnigramLM(logits), task, 64) == 1.0
    logits = torch.zeros(bpe.vocab_size)
    logits[bpe.encoder["f"]] = 6.0  # "fly" (wrong) wins the first question
    logits[bpe.encoder["t"]] = 6.0  # "tall" (wrong) wins the second
    assert scoring.evaluate(UnigramLM(logits), task, 64) == 0.0


def test_agreement_compares_average_log_probabilities_and_drops_broken_pairs(project, bpe):
    pairs = zeroshot_tasks.read_agreement(project.root / "raw" / zeroshot_tasks.AGREEMENT_FILE)
    assert pairs[1] == ("the dog runs.", "the dog run.")
    assert len(pairs) == 3
    task = zeroshot_tasks.agreement_task(pairs, bpe)
    assert task.average and task.labels == (0, 0, 0)
    # "s" boosted: "runs" beats "run", but "is" and "writes" beat "are" and "write": 1 of 3 right
    assert scoring.evaluate(boosted(bpe, "s" + END_OF_WORD), task, 64) == pytest.approx(1 / 3)
    total = zeroshot_tasks.agreement_task(pairs, bpe, total=True)
    assert total.name == "agreement_total" and not total.average and total.candidates == task.candidates
    with pytest.raises(UserError, match="gpt1 download"):
        zeroshot_tasks.read_agreement(project.root / "absent.json")


def test_a_tie_counts_as_wrong():
    task = ZeroShotTask("t", "", 0.5, False, ((Candidate((1,), (2,)), Candidate((1,), (3,))),), (0,))
    assert scoring.accuracy(task, np.array([[-1.0, 1], [-1.0, 1]])) == 0.0
    assert scoring.accuracy(task, np.array([[-0.5, 1], [-1.0, 1]])) == 1.0


# --- scoring with real models ------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["transformer", "lstm"])
def test_padding_and_batching_match_an_unpadded_forward_pass(bpe, kind):
    model = tiny_model(kind, bpe.vocab_size, 7)
    candidates = [Candidate(tuple(range(10, 10 + n)), tuple(range(40, 40 + m))) for n, m in [(1, 3), (6, 2), (3, 5)]]
    batched = scoring.score_candidates(model, candidates, max_positions=32, batch_size=3)
    single = scoring.score_candidates(model, candidates, max_positions=32, batch_size=1)
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
    assert scoring._fit(long, 32) == (cut.context + cut.continuation, 31)
    scores = scoring.score_candidates(model, [long, cut], max_positions=32)
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


def test_choice_chance_is_the_mean_over_rows_with_different_numbers_of_candidates(bpe):
    # BIG-bench's social_iqa has a few two-answer rows among the three-answer ones.
    rows = [*QUESTIONS, MultipleChoiceExample("sam dropped a cup. what happens?", ("it breaks", "it sings"), 0)]
    task = zeroshot_tasks.choice_task(rows, bpe)
    assert task.chance == pytest.approx((1 / 3 + 1 / 3 + 1 / 2) / 3)
    assert [len(candidates) for candidates in task.candidates] == [3, 3, 2]
