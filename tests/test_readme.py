"""The README leads: short, its headline numbers are the measured run's (docs/results/), its DAG names every
stage, and every docs/ file it points to exists; the reference pages stay within their budget and their links
resolve."""

import json
import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_readme_stays_short():
    assert len(README.encode("utf-8")) <= 10 * 1024


def reference_pages() -> list[Path]:
    """docs/ without docs/history/ (what was measured or tried once) and docs/results/ (the pipeline's output)."""
    return [page for page in sorted((ROOT / "docs").rglob("*.md"))
            if page.relative_to(ROOT / "docs").parts[0] not in ("history", "results")]


def test_the_reference_pages_stay_within_their_budget():
    sizes = {page.name: len(page.read_bytes()) for page in reference_pages()}
    # 76 KiB: the pages hold the paper-scale rehearsal of the data stages, the GPU science run and how a change
    # re-runs what it affects (the code fingerprints and their edit table) beside the rest; what was measured once
    # and no longer describes the code moves to docs/history/, outside the budget
    assert sum(sizes.values()) <= 76 * 1024, sizes


def test_every_relative_link_of_the_pages_resolves():
    broken = []
    for page in [ROOT / "README.md", *reference_pages()]:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            if "://" not in target and not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)} → {target}")
    assert broken == []


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


def test_the_trial_is_one_make_target_on_the_first_screen_and_its_measured_run_took_five_minutes_at_most():
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^trial: install\n\tsnakemake --cores 2 --configfile profiles/trial\.yaml --quiet rules$", makefile, re.M)
    assert "make trial" in README[:README.index("## What you get")]
    record = json.loads((ROOT / "docs/measurements/trial.json").read_text())
    assert record["command"] == "make trial" and record["exit_status"] == 0 and record["wall_s"] <= 300, record
    assert record["machine"]["torch_capability"] == "AVX2"  # the class every time budget holds on


def test_make_test_and_make_test_slow_split_the_tests_between_them():
    """Every test runs under exactly one of the two targets CI runs, whatever its markers (the cluster tests skip
    outside `make test-cluster`), and the README's route (tests/test_pipeline.py) is in the quick one."""
    import itertools

    from _pytest.mark.expression import Expression

    makefile = (ROOT / "Makefile").read_text()
    quick, slow = (Expression.compile(re.search(rf"^{target}: install\n\t\$\(PYTEST\) -m \"([^\"]+)\"", makefile,
                                                re.MULTILINE).group(1)) for target in ("test", "test-slow"))
    markers = ("slow", "readme_route", "extended", "cluster", "gpu")
    for present in itertools.product((False, True), repeat=len(markers)):
        def has(name: str, **_) -> bool:
            return dict(zip(markers, present))[name]
        assert quick.evaluate(has) != slow.evaluate(has), dict(zip(markers, present))
    route = {"slow": True, "readme_route": True, "extended": False, "cluster": False, "gpu": False}
    assert quick.evaluate(lambda name, **_: route[name])
    assert "pytestmark = [pytest.mark.slow, pytest.mark.readme_route]" in (ROOT / "tests/test_pipeline.py").read_text()
