"""The paper profile end to end through Snakemake: every stage, zero-shot included, on the upstream formats.

The paper's sources are replaced by small files in their exact upstream layouts (tests/fixtures_paper.py),
served over local HTTP and pinned through `data.mirrors` with their own sha256; the books come from a local
folder, as a user's would. Snakemake gets profiles/paper.yaml, profiles/tiny.yaml (a tiny model) and a
profile of the test's own (those mirrors and folders; three tasks, one per zero-shot heuristic) with its
--configfile. tests/test_dag.py checks that DVC resolves the same jobs for these profiles.
"""

import hashlib
import random
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
import yaml

from test_paper_tasks import CASES, server  # noqa: F401  (server is a fixture)
from test_pipeline import BIN, _fresh_copy, _run

pytestmark = pytest.mark.slow

TASKS = ["cola", "sst2", "race"]
WORDS = ("the old man the young woman a small dog every child her brother our teacher this city that river "
         "walked saw liked found carried painted remembered opened near under after before with without slowly "
         "quietly again today yesterday and but so because when while green heavy bright cold").split()


def _books(folder, count: int = 40, sentences: int = 60) -> None:
    """Plain-text books of made-up but varied English, so no paragraph repeats (prepare deduplicates)."""
    rng = random.Random(0)
    for index in range(count):
        lines = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 14))).capitalize() + "."
                 for _ in range(sentences)]
        paragraphs = [" ".join(lines[start:start + 4]) for start in range(0, sentences, 4)]
        (folder / f"book{index:02d}.txt").write_text("\n\n".join(paragraphs) + "\n")


def _profile(server, root) -> dict:  # noqa: F811
    served_root, base = server
    mirrors = {}
    for task in TASKS:
        for source, payload in CASES[task][0].items():
            (served_root / source).mkdir(exist_ok=True)
            (served_root / source / "archive").write_bytes(payload)
            mirrors[source] = {"url": f"{base}/{source}/archive", "sha256": hashlib.sha256(payload).hexdigest()}
    (root / "books").mkdir()
    _books(root / "books")
    return {"data": {"corpus": ["books"], "tasks": TASKS, "corpus_val_fraction": 0.1, "task_dev_fraction": 0.25,
                     "task_test_fraction": 0.25, "mirrors": mirrors, "local_paths": {"books": str(root / "books")}},
            "bpe": {"merges": 100},
            "pretrain": {"compile": False},  # compiling a 6-step run costs more than the run
            "analysis": {"layer_transfer_tasks": ["race"], "transfer_curve_tasks": ["race"]}}


@pytest.fixture(scope="module")
def paper_run(server, tmp_path_factory):  # noqa: F811
    repo = _fresh_copy(tmp_path_factory.mktemp("paper"))
    outside = tmp_path_factory.mktemp("paper_files")
    (outside / "fixtures.yaml").write_text(yaml.safe_dump(_profile(server, outside)))
    profiles = ["profiles/paper.yaml", "profiles/tiny.yaml", str(outside / "fixtures.yaml")]
    headline = [str(BIN / "snakemake"), "results/ablation.csv", "-n", "--cores", "2", "--configfile", *profiles]
    planned = _run(headline, repo)
    printed = _run([str(BIN / "snakemake"), "--cores", "2", "--printshellcmds", "--configfile", *profiles], repo)
    return SimpleNamespace(root=repo, printed=printed, profiles=profiles, planned=planned, headline=headline)


def test_the_headline_target_plans_every_job_it_needs_on_a_fresh_clone_and_nothing_after_the_run(paper_run):
    """Nothing under results/ is committed, so Snakemake, which trusts any file that is present, builds the
    table here instead of taking a copy from another machine for it."""
    jobs = {line.split()[0]: int(line.split()[1]) for line in paper_run.planned.splitlines()
            if len(line.split()) == 2 and line.split()[1].isdigit()}  # Snakemake's "Job stats" table
    # a job per method and task
    assert jobs.get("finetune") == 4 * len(TASKS) and jobs.get("pretrain") == 2, paper_run.planned[-2000:]
    assert {"user_files", "download", "prepare", "bpe", "tokenize", "evaluate", "baselines", "ablation"} <= set(jobs)
    assert "layer_transfer" not in jobs and "zeroshot" not in jobs  # not what the table reads
    assert "Nothing to be done" in _run(paper_run.headline, paper_run.root)


def test_every_stage_ran_and_table5_has_the_papers_tasks(paper_run):
    table = pd.read_csv(paper_run.root / "results/ablation.csv", index_col="method")
    assert list(table.columns) == ["avg", *TASKS]
    assert list(table.index) == ["full", "no_pretrain", "no_aux_lm", "lstm"]
    layers = pd.read_csv(paper_run.root / "results/layer_transfer.csv")
    assert set(layers["task"]) == {"race"}
    curve = pd.read_csv(paper_run.root / "results/transfer_curve.csv")  # no_pretrain, the tiny step 2, full
    assert set(curve["task"]) == {"race"} and sorted(set(curve["updates"])) == [0, 2, 6]


def test_zero_shot_heuristics_come_from_the_paper_tasks(paper_run):
    table = pd.read_csv(paper_run.root / "results/zero_shot.csv")
    # no BIG-bench download in the paper profile, so no agreement pairs: the tasks' own heuristics only
    assert list(dict.fromkeys(table["task"])) == ["sst2", "sst2_pmi", "cola", "race"]
    assert set(table["model"]) == {"transformer", "lstm"}
    assert table["score"].between(0, 1).all()


def test_the_mirrors_were_used_and_recorded(paper_run):
    sources = yaml.safe_load((paper_run.root / "data/raw/SOURCES.json").read_text())
    assert sources["glue_cola"]["from"].startswith("http://127.0.0.1:")
    assert set(sources) == {"books", "glue_cola", "glue_sst2", "race"}


def test_every_command_got_the_profiles(paper_run):
    # Snakemake prints each job's command (--printshellcmds) as "Shell command: ..." ("None" for `all`)
    commands = {line.split("Shell command:", 1)[1].strip() for line in paper_run.printed.splitlines()
                if "Shell command:" in line} - {"None"}
    flags = " ".join(f"--profile {path}" for path in paper_run.profiles)
    # finetune (a job per method and task), a layer transfer, a curve run, an encoding per task, a record per method,
    # the rest
    assert len(commands) == 4 * len(TASKS) + 1 + 1 + len(TASKS) + 4 + 15, sorted(commands)
    assert all(command.startswith(f"gpt1 {flags} ") for command in commands), sorted(commands)


def test_the_report_gathers_the_tables_figures_and_run_times(paper_run, tmp_path):
    """`snakemake --report` after the run: one HTML file with Table 5, Figure 2 and the pretraining summaries
    (marked with report() in workflow/Snakefile) and each job's run time."""
    page = tmp_path / "report.html"
    # --cores: a training rule's threads are "every core", which Snakemake must know even to draw the report
    _run([str(BIN / "snakemake"), "--cores", "1", "--report", str(page), "--configfile", *paper_run.profiles],
         paper_run.root)
    html = page.read_text(encoding="utf-8")
    for name in ("ablation.csv", "ablation_intervals.csv", "layer_transfer.png", "zero_shot.png", "Table 5",
                 "Figure 2", "Pretraining", "finetune", "transfer_curve.png", "Transfer over pretraining"):
        assert name in html, name


def test_a_rewritten_book_reruns_the_pipeline_from_its_fingerprint(paper_run):
    """Snakemake takes the registered books as the user_files rule's inputs: unchanged, nothing is planned; a
    rewritten book plans user_files and, through its fingerprint, download and what follows. (Runs last: it
    leaves the book changed.)"""
    dry_run = [str(BIN / "snakemake"), "--cores", "2", "--dry-run", "--configfile", *paper_run.profiles]
    assert "Nothing to be done" in _run(dry_run, paper_run.root)
    book = Path(paper_run.profiles[-1]).parent / "books" / "book00.txt"
    book.write_text(book.read_text() + "\nA sentence added later.\n")
    planned = _run(dry_run, paper_run.root)
    for rule in ("user_files", "download", "prepare", "pretrain"):
        assert f"rule {rule}:" in planned, (rule, planned[-3000:])
