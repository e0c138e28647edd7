"""Input transformations: exact id sequences, the truncation policy, and the input checks."""

from __future__ import annotations

import math

import pytest

from gpt1.tokenizer.bpe import END_OF_WORD, Gpt1Bpe
from gpt1.errors import UserError
from gpt1.data.records import (
    ClassificationExample,
    EntailmentExample,
    MultipleChoiceExample,
    SimilarityExample,
    TaskSpec,
    check_examples,
)
from gpt1.model.task_encoding import encode_examples, special_ids
from gpt1.model.transforms import (
    SpecialIds,
    choice_sequence,
    fit_pair,
    pair_sequence,
    similarity_sequences,
    single_sequence,
)

CHARACTERS = list("abcdefghijklmnopqrstuvwxyz0123456789.,?!'")
S, D, E = 1000, 1001, 1002  # start, delimiter, extract for the id-level tests
SPECIAL = SpecialIds(S, D, E)

SPECS = {
    "classification": TaskSpec("cls", "classification", ("negative", "positive"), ("accuracy",), "test"),
    "entailment": TaskSpec("nli", "entailment", ("entailment", "neutral", "contradiction"), ("accuracy",), "test"),
    "similarity": TaskSpec("sts", "similarity", (), ("pearson", "spearman"), "test"),
    "paraphrase": TaskSpec("mrpc", "similarity", ("not_paraphrase", "paraphrase"), ("f1", "accuracy"), "test"),
    "multiple_choice": TaskSpec("mc", "multiple_choice", (), ("accuracy",), "test"),
}

def tiny_bpe() -> Gpt1Bpe:
    """Characters only, no merges: every id is easy to predict (special ids follow the characters)."""
    return Gpt1Bpe.from_merges(CHARACTERS + [c + END_OF_WORD for c in CHARACTERS], [])

@pytest.fixture(scope="module")
def bpe() -> Gpt1Bpe:
    return tiny_bpe()

def ids(bpe: Gpt1Bpe, *words: str) -> list[int]:
    """Expected BPE ids of space-separated lowercase words, spelled from the encoder by hand."""
    result = []
    for word in words:
        result += [bpe.encoder[c] for c in word[:-1]] + [bpe.encoder[word[-1] + END_OF_WORD]]
    return result

# --- id level ----------------------------------------------------------------------------------------------

def test_single_sequence_is_start_text_extract():
    assert single_sequence([5, 6, 7], SPECIAL, 16) == (S, 5, 6, 7, E)
    assert single_sequence([], SPECIAL, 16) == (S, E)

def test_single_sequence_cuts_the_text_end_and_keeps_the_extract_token():
    assert single_sequence(list(range(10)), SPECIAL, 6) == (S, 0, 1, 2, 3, E)

def test_pair_sequence_is_start_first_delimiter_second_extract():
    assert pair_sequence([5, 6], [7, 8, 9], SPECIAL, 16) == (S, 5, 6, D, 7, 8, 9, E)

def test_pair_truncation_cuts_the_longer_part_from_its_end():
    # budget 10 - 3 = 7: the 2-token premise stays, the hypothesis keeps its first 5 tokens.
    assert pair_sequence([1, 2], list(range(20, 40)), SPECIAL, 10) == (S, 1, 2, D, 20, 21, 22, 23, 24, E)
    # both long: each keeps budget // 2 tokens
    assert pair_sequence(list(range(10)), list(range(20, 30)), SPECIAL, 9) == (S, 0, 1, 2, D, 20, 21, 22, E)

@pytest.mark.parametrize("len_a, len_b, budget, expected", [
    (3, 4, 10, (3, 4)), (10, 3, 8, (5, 3)), (3, 10, 8, (3, 5)), (6, 5, 8, (4, 4)), (6, 5, 9, (4, 4)), (0, 30, 5, (0, 5)),
])
def test_fit_pair(len_a, len_b, budget, expected):
    assert fit_pair(len_a, len_b, budget) == expected
    assert fit_pair(len_b, len_a, budget) == expected[::-1]  # symmetric

def test_similarity_makes_both_orders_with_the_same_tokens():
    first, second = similarity_sequences([1, 2], [3, 4, 5], SPECIAL, 16)
    assert first == (S, 1, 2, D, 3, 4, 5, E)
    assert second == (S, 3, 4, 5, D, 1, 2, E)
    long_a, long_b = list(range(100, 130)), list(range(200, 210))
    first, second = similarity_sequences(long_a, long_b, SPECIAL, 16)
    assert len(first) == len(second) == 15  # budget 13: both parts keep 6 (an odd budget leaves one spare)
    assert sorted(first) == sorted(second)
    assert (first[0], first[-1], second[0], second[-1]) == (S, E, S, E) and first.count(D) == second.count(D) == 1

def test_choice_sequence_keeps_the_context_end_and_the_answer_start():
    assert choice_sequence([1, 2, 3], [7, 8], SPECIAL, 16) == (S, 1, 2, 3, D, 7, 8, E)
    # budget 7: the short answer stays whole, the context keeps its last 5 tokens (nearest the question)
    assert choice_sequence(list(range(20)), [7, 8], SPECIAL, 10) == (S, 15, 16, 17, 18, 19, D, 7, 8, E)
    # a long answer keeps its first budget // 2 = 3 tokens, the context its last 4
    assert choice_sequence(list(range(20)), list(range(50, 60)), SPECIAL, 10) == (S, 16, 17, 18, 19, D, 50, 51, 52, E)
    # a short context leaves the room to the answer
    assert choice_sequence([1], list(range(50, 60)), SPECIAL, 10) == (S, 1, D, *range(50, 56), E)

def test_too_small_a_context_is_a_user_error():
    with pytest.raises(UserError, match="n_positions"):
        pair_sequence([1], [2], SPECIAL, 3)

# --- through the BPE -------------------------------------------------------------------------------------

def test_special_ids_are_the_three_appended_tokens(bpe):
    special = special_ids(bpe)
    base = len(bpe.encoder)
    assert (special.start, special.delimiter, special.extract) == (base, base + 1, base + 2)
    assert bpe.vocab_size == base + 3

def test_encoded_examples_have_the_exact_ids_per_family(bpe):
    s, d, e = special_ids(bpe).start, special_ids(bpe).delimiter, special_ids(bpe).extract
    [cls] = encode_examples([ClassificationExample("Good film.", 1)], SPECS["classification"], bpe, 64)
    assert cls.sequences == ((s, *ids(bpe, "good", "film", "."), e),) and cls.label == 1
    [nli] = encode_examples([EntailmentExample("A dog runs", "An animal moves", 0)], SPECS["entailment"], bpe, 64)
    assert nli.sequences == ((s, *ids(bpe, "a", "dog", "runs"), d, *ids(bpe, "an", "animal", "moves"), e),)
    [sim] = encode_examples([SimilarityExample("cats sleep", "dogs bark", 0.25)], SPECS["similarity"], bpe, 64)
    a, b = ids(bpe, "cats", "sleep"), ids(bpe, "dogs", "bark")
    assert sim.sequences == ((s, *a, d, *b, e), (s, *b, d, *a, e)) and sim.label == 0.25
    [mc] = encode_examples([MultipleChoiceExample("Who won?", ("tom", "ann", "bo"), 2)],
                           SPECS["multiple_choice"], bpe, 64)
    context = ids(bpe, "who", "won", "?")
    assert mc.sequences == tuple((s, *context, d, *ids(bpe, answer), e) for answer in ("tom", "ann", "bo"))
    assert mc.label == 2

def test_an_example_longer_than_the_context_is_truncated_not_rejected(bpe):
    long_text = " ".join(["word"] * 100)
    [cls] = encode_examples([ClassificationExample(long_text, 0)], SPECS["classification"], bpe, 32)
    [mc] = encode_examples([MultipleChoiceExample(long_text + " why?", ("yes", "no"), 0)],
                           SPECS["multiple_choice"], bpe, 32)
    extract = special_ids(bpe).extract
    assert len(cls.sequences[0]) == 32 and cls.sequences[0][-1] == extract
    delimiter = special_ids(bpe).delimiter
    for sequence, answer in zip(mc.sequences, ("yes", "no")):
        answer_ids = ids(bpe, answer)
        assert len(sequence) <= 32
        assert sequence[-len(answer_ids) - 2:] == (delimiter, *answer_ids, extract)  # the answer stays whole
    # the context keeps its end: the question mark survives the cut
    question = ids(bpe, "?")[0]
    assert all(question in sequence for sequence in mc.sequences)

# --- bad input ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("spec_name, examples, message", [
    ("classification", [], "empty"),
    ("classification", [ClassificationExample("x", 2)], "outside the task's label set"),
    ("classification", [ClassificationExample("x", -1)], "outside the task's label set"),
    ("classification", [ClassificationExample("x", 0.5)], "outside the task's label set"),
    ("paraphrase", [SimilarityExample("a", "b", 3.0)], "outside the task's label set"),
    ("similarity", [SimilarityExample("a", "b", math.nan)], "not a finite number"),
    ("multiple_choice", [MultipleChoiceExample("c", ("a", "b", "c"), 3)], "outside the 3 choices"),
    ("multiple_choice", [MultipleChoiceExample("c", ("a",), 0)], "at least 2 choices"),
])
def test_bad_input_stops_with_a_clear_user_error(spec_name, examples, message):
    with pytest.raises(UserError, match=message):
        check_examples(examples, SPECS[spec_name], "tasks/x/train.jsonl")

def test_good_labels_pass(bpe):
    check_examples([SimilarityExample("a", "b", 4.2)], SPECS["similarity"], "x")  # any finite score
    check_examples([SimilarityExample("a", "b", 1.0)], SPECS["paraphrase"], "x")
    check_examples([MultipleChoiceExample("c", ("a", "b"), 1)], SPECS["multiple_choice"], "x")
