"""The README leads: short, its headline numbers are the measured run's (docs/results/), its DAG names every
stage, and every docs/ file it points to exists."""

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_readme_stays_short():
    assert len(README.encode("utf-8")) <= 12 * 1024


def test_table5_and_its_intervals_are_the_measured_runs():
    """Each Table 5 row and each interval row of the README is a line of docs/results/ablation.md, which the
    measured run's `gpt1 ablation` wrote; nothing typed by hand."""
    measured = set((ROOT / "docs/results/ablation.md").read_text(encoding="utf-8").splitlines())
    rows = [line for line in README.splitlines() if re.match(r"\| (Transformer|LSTM) w", line)]
    assert len(rows) == 4 + 3, rows  # four methods, three differences
    assert [row for row in rows if row not in measured] == []


def test_the_mermaid_dag_names_every_stage():
    block = README.split("```mermaid", 1)[1].split("```", 1)[0]
    nodes = set(re.findall(r"\b([a-z_]+)\b(?=[\s\[])", block)) | set(re.findall(r"--> ([a-z_]+)", block))
    stages = set(yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"])
    assert stages <= nodes, sorted(stages - nodes)


def test_every_docs_file_the_readme_names_exists():
    named = set(re.findall(r"`(docs/[\w./-]+)`", README)) | set(re.findall(r"\]\((docs/[\w./-]+)\)", README))
    assert named
    assert sorted(path for path in named if not (ROOT / path).exists()) == []
