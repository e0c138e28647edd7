"""The paper's task input transformations (Figure 1) and its truncation policy.

Start `[s]`, delimiter `$` and extract `[e]` are the BPE's `_start_`, `_delimiter_`, `_classify_` ids:

| family          | sequences per example                                   |
|-----------------|---------------------------------------------------------|
| classification  | `[s] text [e]`                                          |
| entailment      | `[s] premise $ hypothesis [e]`                          |
| similarity      | `[s] a $ b [e]` and `[s] b $ a [e]` (summed by the head) |
| multiple choice | `[s] context $ answer_k [e]`, one per candidate         |

Truncation policy (a sequence never exceeds `n_ctx` tokens; `[s]`, `$` and `[e]` are never dropped):
- one text: keep its first `n_ctx - 2` tokens (cut from the end);
- two texts (entailment, similarity): cut the longer text from its end, one token at a time, until both
  fit in `n_ctx - 3`; when they are equally long both are cut. The result depends only on the two
  lengths, symmetrically, so both similarity orders hold exactly the same tokens and swapping a and b
  swaps nothing but the order;
- multiple choice: the answer keeps its first tokens, at least `(n_ctx - 3) // 2` of them when it is
  that long (more when the context leaves room); the context fills the rest and keeps its *last* tokens,
  the ones nearest the question and the answer. (The released code cut each part to `n_ctx // 2 - 2`,
  wasting room whenever one part is short.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from gpt1.errors import UserError

MIN_CONTEXT = 4  # [s] $ [e] and at least one text token


@dataclass(frozen=True)
class SpecialIds:
    start: int
    delimiter: int
    extract: int


@dataclass(frozen=True)
class EncodedExample:
    """The model's view of one example: its sequences (1, 2 for similarity, k for multiple choice)."""

    sequences: tuple[tuple[int, ...], ...]
    label: float  # class index, candidate index, or regression target


def _check_context(n_ctx: int) -> None:
    if n_ctx < MIN_CONTEXT:
        raise UserError(f"a context of {n_ctx} tokens cannot hold [s] text $ text [e]; use n_positions >= {MIN_CONTEXT}")


def fit_pair(len_a: int, len_b: int, budget: int) -> tuple[int, int]:
    """Lengths after cutting the longer part (both on a tie) one token at a time until they fit `budget`."""
    if len_a + len_b <= budget:
        return len_a, len_b
    shorter = min(len_a, len_b)
    if 2 * shorter <= budget:  # only the longer part is cut
        return (len_a, budget - len_a) if len_a < len_b else (budget - len_b, len_b)
    return budget // 2, budget // 2


def single_sequence(text: Sequence[int], special: SpecialIds, n_ctx: int) -> tuple[int, ...]:
    """`[s] text [e]`, the text cut from its end to fit."""
    _check_context(n_ctx)
    return (special.start, *text[: n_ctx - 2], special.extract)


def pair_sequence(first: Sequence[int], second: Sequence[int], special: SpecialIds, n_ctx: int) -> tuple[int, ...]:
    """`[s] first $ second [e]`, the longer text cut from its end to fit (see the module notes)."""
    _check_context(n_ctx)
    keep_first, keep_second = fit_pair(len(first), len(second), n_ctx - 3)
    return (special.start, *first[:keep_first], special.delimiter, *second[:keep_second], special.extract)


def similarity_sequences(a: Sequence[int], b: Sequence[int], special: SpecialIds,
                         n_ctx: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Both orders, `[s] a $ b [e]` and `[s] b $ a [e]`, holding the same tokens."""
    return pair_sequence(a, b, special, n_ctx), pair_sequence(b, a, special, n_ctx)


def choice_sequence(context: Sequence[int], answer: Sequence[int], special: SpecialIds,
                    n_ctx: int) -> tuple[int, ...]:
    """`[s] context $ answer [e]`: the answer keeps its start, the context keeps its end."""
    _check_context(n_ctx)
    budget = n_ctx - 3
    keep_answer = min(len(answer), max(budget - len(context), budget // 2))
    keep_context = min(len(context), budget - keep_answer)
    kept_context = context[len(context) - keep_context:]
    return (special.start, *kept_context, special.delimiter, *answer[:keep_answer], special.extract)


# --- whole splits ------------------------------------------------------------------------------------------

def build_sequences(texts: list[Sequence[int]], family: str, special: SpecialIds,
                    n_ctx: int) -> tuple[tuple[int, ...], ...]:
    """One example's encoded texts (in `texts_of` order) -> its model input sequences."""
    if family == "classification":
        return (single_sequence(texts[0], special, n_ctx),)
    if family == "entailment":
        return (pair_sequence(texts[0], texts[1], special, n_ctx),)
    if family == "similarity":
        return similarity_sequences(texts[0], texts[1], special, n_ctx)
    return tuple(choice_sequence(texts[0], answer, special, n_ctx) for answer in texts[1:])


def transform_examples(texts: Sequence[Sequence[Sequence[int]]], labels: Sequence[float], family: str,
                       special: SpecialIds, n_ctx: int) -> list[EncodedExample]:
    """Examples whose texts are already token ids (in `texts_of` order) -> the model's input sequences."""
    return [EncodedExample(build_sequences(list(ids), family, special, n_ctx), float(label))
            for ids, label in zip(texts, labels)]
