"""docs/data.md's worked example of a user's own task and corpus part, run as written on the tiny profile through DVC,
in a fresh copy of the repository: prepare and encode_task take them as any other, the corpus is decontaminated,
and an edited row of the user's file re-runs prepare, nothing upstream of it.

The example's CSV is written from the default's Rotten Tomatoes sentences by the docs' own lines (never typed in).
"""

import json
import subprocess

import pandas as pd
import pytest
import yaml

from gpt1.data.records import read_examples, texts_of
from gpt1.data.cleanup import sentence_key, sentences
from gpt1.params.files import merge
from test_pipeline import BIN, ROOT, _changed_stages, _fresh_copy, _run, _stages_run, _tiny_params

pytestmark = pytest.mark.slow


def worked_example() -> tuple[dict, str]:
    """The params.yaml lines and the shell lines of docs/data.md's "Your own data" example."""
    section = (ROOT / "docs/data.md").read_text().split("## Your own data", 1)[1].split("\n## ", 1)[0]
    example = section.split("**Worked example.**", 1)[1]
    declared = yaml.safe_load(example.split("```yaml\n", 1)[1].split("```", 1)[0])
    commands = example.split("```bash\n", 1)[1].split("\n```", 1)[0]
    return declared, commands


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    repo = _fresh_copy(tmp_path_factory.mktemp("repo"))
    home = tmp_path_factory.mktemp("home")
    declared, commands = worked_example()
    (repo / "params.yaml").write_text(yaml.safe_dump(merge(_tiny_params(), declared), sort_keys=False))
    _run(["bash", "-euc", commands], repo, HOME=str(home))
    output = _run([str(BIN / "dvc"), "repro", "encode_task@my_reviews"], repo, HOME=str(home))
    return repo, home, output


def test_the_example_runs_prepare_and_encode_task_on_the_users_files(project):
    repo, home, output = project
    assert {"user_files", "prepare", "bpe", "encode_task@my_reviews"} <= _stages_run(output)
    sizes = {split: len(read_examples(repo / "data/tasks/my_reviews" / f"{split}.jsonl", "classification"))
             for split in ("train", "dev", "test")}
    assert sizes == {"train": 480, "dev": 60, "test": 60}  # as the docs say
    assert json.loads((repo / "data/tasks/my_reviews/task.json").read_text())["source"] == "data.user_tasks.my_reviews"
    assert any((repo / "data/task_tokens/my_reviews").iterdir())
    prints = json.loads((repo / "data/user_files/user_data.json").read_text())
    assert set(prints) == {"data.user_tasks.my_reviews.train", "data.user_corpus.my_notes"}
    assert list(prints["data.user_corpus.my_notes"]) == ["reviews.txt"]


def test_the_users_corpus_is_counted_and_holds_no_dev_or_test_sentence(project):
    repo, _, _ = project
    stats = json.loads((repo / "data/corpus/stats.json").read_text())
    assert stats["my_notes"]["documents"] == 1 and stats["my_notes"]["decontaminated_sentences"] > 0
    corpus = [json.loads(line) for name in ("train", "val")
              for line in (repo / "data/corpus" / f"{name}.jsonl").read_text().splitlines()]
    assert {row["part"] for row in corpus} == {"lee_background", "my_notes"}
    kept = {sentence_key(part) for row in corpus for part in sentences(row["text"])}
    evaluated = {sentence_key(part) for split in ("dev", "test")
                 for example in read_examples(repo / "data/tasks/my_reviews" / f"{split}.jsonl", "classification")
                 for text in texts_of(example) for part in sentences(text)} - {None}
    assert evaluated and not evaluated & kept


def test_the_users_task_goes_through_every_stage_to_table_5_and_predict(project):
    """A declared task is a task like any other, from the baselines and every method's fine-tuning to Table 5 with
    intervals, Figure 2's layer transfer and transfer curve, and `gpt1 predict`. The rest of the pipeline runs the
    docs' other way, through Snakemake: two jobs at a time, and no lock file to rewrite after each."""
    repo, home, _ = project
    _run([str(BIN / "snakemake"), "--cores", "2"], repo, HOME=str(home))
    for method in ("full", "no_pretrain", "no_aux_lm", "lstm"):
        assert (repo / "results/finetune" / method / "my_reviews/seed1/predictions_test.jsonl").is_file(), method
    table = pd.read_csv(repo / "results/ablation.csv")
    assert "my_reviews" in table.columns and table["my_reviews"].notna().all()
    intervals = pd.read_csv(repo / "results/ablation_intervals.csv")
    assert "my_reviews" in set(intervals.column)
    # The tiny profile learns nothing, and says so: full is not above the majority class (the most frequent label of
    # the training examples), and Table 5 marks full's cell as docs/data.md says
    check = intervals[(intervals.comparison == "full - majority class") & (intervals.column == "my_reviews")].iloc[0]
    assert check.verdict == "not above" and check.low <= 0
    full = next(line for line in (repo / "results/ablation.md").read_text().splitlines()
                if line.startswith("| Transformer w/ aux LM (full) | "))
    assert full.endswith(" † |") and "† not above the majority class (one-sided 95 %)" in (
        repo / "results/ablation.md").read_text()
    assert "my_reviews" in set(pd.read_csv(repo / "results/layer_transfer.csv")["task"])
    assert "my_reviews" in set(pd.read_csv(repo / "results/transfer_curve.csv")["task"])
    predicted = subprocess.run([str(BIN / "gpt1"), "predict", "--run", "results/finetune/full/my_reviews/seed1"],
                               cwd=repo, input="a gripping , beautifully acted film\n", capture_output=True,
                               text=True, check=True)
    row = json.loads(predicted.stdout.strip().splitlines()[-1])
    assert row["prediction_name"] in ("negative", "positive")


def test_an_edited_row_reruns_prepare_and_nothing_upstream(project):
    """(Stages DVC never ran, fine-tuning and what follows, are listed as changed before and after.)"""
    repo, home, _ = project
    dvc = str(BIN / "dvc")
    before = _changed_stages(_run([dvc, "status"], repo, HOME=str(home)))
    assert not before & {"download", "prepare", "bpe", "encode_task@my_reviews"}, before
    reviews = home / "gpt1-data/reviews.csv"
    header, first, *rest = reviews.read_text().splitlines(keepends=True)
    reviews.write_text(header + first.replace(",", " (edited),", 1) + "".join(rest))
    _run([dvc, "repro", "user_files"], repo, HOME=str(home))  # what docs/data.md says to run before `dvc status`
    after = _changed_stages(_run([dvc, "status"], repo, HOME=str(home)))
    assert after - before == {"prepare"}, after - before  # download, upstream of it, untouched
