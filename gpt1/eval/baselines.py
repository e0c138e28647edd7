"""The baselines' scores: what a model must beat, on exactly the examples the fine-tuning runs use (for the
`baselines` stage).

- `majority`: the most frequent training label (classification, entailment, labelled similarity), the
  most frequent gold candidate index (multiple choice; ties go to the lower index), or the training
  mean for a regression target, whose correlations are then undefined: reported as 0 with a note.
- `tfidf_logreg`: TF-IDF (word 1-2 grams) + logistic regression, for every task with class labels
  (classification, entailment, MRPC/QQP-style similarity). A pair is one text, "first _delimiter_ second":
  the separator is itself a TF-IDF word, so bigrams across the boundary read "word _delimiter_".
- `tfidf_cosine`: for a regression similarity target (STS-B-style), the cosine between the two texts'
  TF-IDF vectors (IDF fitted on the training texts), untrained on the scores: the lexical-overlap
  reference a correlation metric is usually read against.
Training data = the same seeded subsample as `gpt1 finetune` (finetune.max_train_examples); dev/test =
the same seeded samples of `max_eval_examples` rows. Output: one JSON, {task: {baseline: {"dev", "test", "notes"}}};
the majority baseline of a task with classes or candidates also records its `label`, the one definition of "the
majority class" that Table 5's † mark reads too (gpt1/eval/intervals.py).
"""

from __future__ import annotations

import logging
from collections import Counter

import numpy as np

from gpt1.errors import UserError
from gpt1.eval.metrics import DIGITS, score
from gpt1.data.records import ClassificationExample, EntailmentExample, Example, SimilarityExample
from gpt1.data.task_data import TaskData

log = logging.getLogger(__name__)

BASELINES = ("majority", "tfidf_logreg", "tfidf_cosine")
SEPARATOR = "_delimiter_"  # GPT-1's delimiter name; a word to TfidfVectorizer's default token pattern


def majority_label(data: TaskData) -> float:
    """The most frequent label of the training examples fine-tuning uses (the lowest on a tie), or their mean for a
    regression target."""
    labels = [example.label for example in data.splits["train"]]
    if data.spec.is_regression:
        return round(float(np.mean(labels)), DIGITS)
    tally = Counter(int(label) for label in labels)
    most = max(tally.values())
    return min(label for label, n in tally.items() if n == most)


def _text(example: Example) -> str:
    if isinstance(example, ClassificationExample):
        return example.text
    if isinstance(example, EntailmentExample):
        return f"{example.premise} {SEPARATOR} {example.hypothesis}"
    if isinstance(example, SimilarityExample):
        return f"{example.a} {SEPARATOR} {example.b}"
    raise TypeError(f"no text baseline for {type(example).__name__}")


def has_text_baseline(data: TaskData) -> bool:
    """Classes to learn from text: classification, entailment, and paraphrase-style similarity."""
    return data.spec.family in ("classification", "entailment") or (
        data.spec.family == "similarity" and not data.spec.is_regression)


def has_cosine_baseline(data: TaskData) -> bool:
    """A similarity score to correlate with (STS-B style): the TF-IDF cosine needs no training labels."""
    return data.spec.family == "similarity" and data.spec.is_regression


def tfidf_cosine(data: TaskData):
    """A predictor: the TF-IDF cosine of each pair (vectoriser fitted on both sides of the training pairs)."""
    from sklearn.feature_extraction.text import TfidfVectorizer  # scikit-learn: only where a baseline is fitted

    train = data.splits["train"]
    vectorizer = TfidfVectorizer(sublinear_tf=True, lowercase=True).fit([t for e in train for t in (e.a, e.b)])

    def predict(examples: list[SimilarityExample]) -> list[float]:
        a = vectorizer.transform([e.a for e in examples])
        b = vectorizer.transform([e.b for e in examples])  # rows are L2-normalised: the dot is the cosine
        return [round(float(value), DIGITS) for value in np.asarray(a.multiply(b).sum(axis=1)).ravel()]
    return predict


def tfidf_logreg(data: TaskData, seed: int):
    """The fitted pipeline (TF-IDF + logistic regression) on the training subsample."""
    from sklearn.feature_extraction.text import TfidfVectorizer  # scikit-learn: only where a baseline is fitted
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    pipeline = make_pipeline(
        TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, lowercase=True),
        LogisticRegression(C=1.0, max_iter=2000, random_state=seed),
    )
    train = data.splits["train"]
    labels = [int(e.label) for e in train]
    if len(set(labels)) < 2:
        raise UserError(f"{data.spec.name}: every example of the training sample has label {labels[0]}, so no "
                        "classifier can be fitted; raise finetune.max_train_examples or check the task's train split")
    return pipeline.fit([_text(e) for e in train], labels)


def task_baselines(data: TaskData, seed: int) -> dict[str, dict]:
    """{baseline: {"dev": metrics, "test": metrics, "notes": [...]}} for one task."""
    results: dict[str, dict] = {}
    majority = majority_label(data)
    predictors = {"majority": lambda examples: [majority] * len(examples)}
    if has_text_baseline(data):
        model = tfidf_logreg(data, seed)
        predictors["tfidf_logreg"] = lambda examples: model.predict([_text(e) for e in examples]).tolist()
    if has_cosine_baseline(data):
        predictors["tfidf_cosine"] = tfidf_cosine(data)
    for name, predict in predictors.items():
        entry: dict = {"notes": []}
        for split in ("dev", "test"):
            examples = data.splits[split]
            scored = score(data.spec, [e.label for e in examples], predict(examples))
            entry[split] = scored.values
            entry["notes"] += [f"{split}: {note}" for note in scored.notes]
        results[name] = entry
    if not data.spec.is_regression:
        results["majority"]["label"] = majority
    return results
