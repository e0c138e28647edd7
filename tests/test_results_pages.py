"""The results pages follow from the files the measured run wrote (docs/results/): every Table 5, interval and
Tables 2–4 row docs/results.md shows is a line of the generated tables, every trend row is its CSV row formatted
once, and every verdict the README and docs/results.md state in words is the one the files compute."""

import re
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs/results"
PAGE = (ROOT / "docs/results.md").read_text(encoding="utf-8")
README = (ROOT / "README.md").read_text(encoding="utf-8")
README_WORDS = " ".join(README.split())  # a phrase may wrap across lines


def lines_of(name: str) -> set[str]:
    return set((RESULTS / name).read_text(encoding="utf-8").splitlines())


@pytest.mark.parametrize("pattern, source", [
    (r"\| (Transformer|LSTM) w", "ablation.md"),  # Table 5's rows and the intervals' rows
    (r"\| [A-Z][\w-]* \((accuracy|pearson|matthews|f1)\) \|", "paper_tables.md"),  # Tables 2–4
])
def test_the_pages_tables_are_lines_of_the_generated_tables(pattern, source):
    """The README's Table 5 rows: tests/test_readme.py."""
    rows = [line for line in PAGE.splitlines() if re.match(pattern, line)]
    assert rows and [row for row in rows if row not in lines_of(source)] == []


def _row(trend: str, task: str, change: float, low: float, high: float, direction: str, rho: float) -> str:
    rho_text = "—" if pd.isna(rho) else f"{rho:+.2f}"
    return f"| {trend} | {task} | {change:+.1f} [{low:+.1f}, {high:+.1f}] | {direction} | {rho_text} |"


def trend_rows() -> list[str]:
    """Each test-split trend of the three trend files, ×100, as docs/results.md's trend table shows it."""
    rows = []
    layers = pd.read_csv(RESULTS / "layer_transfer_trend.csv")
    for row in layers[layers.split == "test"].itertuples():
        rows.append(_row("layers, all − none", row.task, 100 * row.all_minus_none, 100 * row.low, 100 * row.high,
                         row.direction, row.spearman_rho))
    curve = pd.read_csv(RESULTS / "transfer_curve_trend.csv")
    for row in curve[curve.split == "test"].itertuples():
        rows.append(_row("fine-tuned over pretraining", row.task, row.last_minus_first, row.low, row.high,
                         row.direction, row.spearman_rho))
    zero_shot = pd.read_csv(RESULTS / "zero_shot_trend.csv")
    for row in zero_shot.itertuples():
        half = 1.96 * row.se
        model = {"transformer": "Transformer", "lstm": "LSTM"}[row.model]
        rows.append(_row(f"zero-shot, {model}", row.task, 100 * row.difference, 100 * (row.difference - half),
                         100 * (row.difference + half), row.direction, row.spearman))
    return rows


def test_the_trend_table_is_the_trend_files():
    shown = [line for line in PAGE.splitlines() if re.match(r"\| (layers, |fine-tuned over|zero-shot, )", line)]
    assert shown == trend_rows()


def _verdict(comparison: str, column: str) -> str:
    intervals = pd.read_csv(RESULTS / "ablation_intervals.csv")
    return intervals[(intervals.comparison == comparison) & (intervals.column == column)].verdict.item()


def _direction(file: str, **where) -> str:
    frame = pd.read_csv(RESULTS / file)
    for column, value in where.items():
        frame = frame[frame[column] == value]
    return frame.direction.item()


# Each finding the README states in words: its phrase for each verdict the files can give. Exactly the phrase of the
# computed verdict must be there, so a run that moves a verdict fails here until the words follow.
FINDINGS = [
    (lambda: _verdict("full - no_pretrain", "avg"),
     {"supported": "**pretraining helps** on average", "not supported": "**pretraining's gain is within the noise**",
      "at the edge": "**pretraining's gain is at the edge** of its interval"}),
    (lambda: _verdict("full - lstm", "avg"),
     {"supported": "**the Transformer beats the LSTM** on average",
      "not supported": "**the Transformer's lead over the LSTM is within the noise** on average",
      "at the edge": "**the Transformer's lead over the LSTM is at the edge** of its interval on average"}),
    (lambda: _verdict("full - no_aux_lm", "avg"),
     {"not supported": "**the auxiliary LM adds nothing measurable** on average",
      "supported": "**the auxiliary LM helps** on average",
      "at the edge": "**the auxiliary LM's gain is at the edge** of its interval on average"}),
    (lambda: _direction("layer_transfer_trend.csv", task="snli_100k", split="test"),
     {"rises": "**transferred layers help** on entailment",
      "flat": "**transferred layers' gain is within the noise**"}),
    (lambda: _direction("zero_shot_trend.csv", model="transformer", task="social_iqa"),
     {"rises": "**zero-shot** multiple-choice ability rises over pretraining",
      "flat": "**zero-shot** multiple-choice ability stays flat over pretraining"}),
    (lambda: _direction("zero_shot_trend.csv", model="transformer", task="agreement"),
     {"falls": "the agreement heuristic falls", "flat": "the agreement heuristic stays flat",
      "rises": "the agreement heuristic rises"}),
]


@pytest.mark.parametrize("computed, phrases", FINDINGS)
def test_the_readmes_findings_are_the_computed_verdicts(computed, phrases):
    verdict = computed()
    assert verdict in phrases, f"no words for the verdict {verdict!r}: add them here and in the README"
    assert phrases[verdict] in README_WORDS
    assert [phrase for other, phrase in phrases.items() if other != verdict and phrase in README_WORDS] == []
