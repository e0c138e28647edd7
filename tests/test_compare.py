"""`gpt1 compare`: B − A per method and task with a two-level bootstrap interval (test rows paired; seeds paired where
both sides ran the same ones, drawn per side otherwise), both designs checked against a direct implementation (a
loop over resamples with scipy); an experiment against itself and a method it left alone read 0 [0, 0]; the
refusals."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from scipy.stats import pearsonr

from gpt1.data.records import TaskSpec
from gpt1.errors import UserError
from gpt1.eval import compare
from gpt1.eval.compare import Side

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = 60
TASKS = {"sentiment": "accuracy", "similarity": "pearson"}  # in data.tasks' order
METHODS = ["full", "no_pretrain"]


def _labels(task: str) -> np.ndarray:
    rng = np.random.default_rng(len(task))
    return rng.integers(0, 2, EXAMPLES).astype(float) if TASKS[task] == "accuracy" else rng.normal(size=EXAMPLES)


def _predictions(task: str, skill: float, seed: int) -> np.ndarray:
    """Fixed predictions: a classifier right on a `skill` share of rows, or a regressor correlated by `skill`."""
    rng, gold = np.random.default_rng(1000 * seed + int(100 * skill)), _labels(task)
    if TASKS[task] == "accuracy":
        return np.where(rng.random(EXAMPLES) < skill, gold, 1 - gold)
    return skill * gold + rng.normal(size=EXAMPLES)


def project(root: Path, skill: dict[str, float], seeds=(1, 2), max_eval_examples=EXAMPLES, test_text="row") -> Path:
    """A folder laid out as the project: params.yaml, each task's task.json and test split, each run's predictions."""
    root.mkdir(parents=True)
    params = {"seed": 7, "data": {"tasks": list(TASKS)}, "finetune": {"methods": METHODS, "seeds": list(seeds),
                                                                      "max_eval_examples": max_eval_examples}}
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    for task, metric in TASKS.items():
        folder = root / "data/tasks" / task
        folder.mkdir(parents=True)
        spec = TaskSpec(task, "classification", ("a", "b"), (metric,), "test")
        folder.joinpath("task.json").write_text(spec.to_json())
        folder.joinpath("test.jsonl").write_text("".join(json.dumps({"text": f"{test_text} {i}"}) + "\n"
                                                         for i in range(EXAMPLES)))
        for method in METHODS:
            for seed in seeds:
                run = root / "results/finetune" / method / task / f"seed{seed}"
                run.mkdir(parents=True)
                predicted = _predictions(task, skill[method], seed)
                run.joinpath("predictions_test.jsonl").write_text("".join(
                    json.dumps({"index": i, "label": float(y), "prediction": float(p)}) + "\n"
                    for i, (y, p) in enumerate(zip(_labels(task), predicted))))
    return root


def direct_bootstrap(tasks: dict[str, tuple[str, np.ndarray, list, list]], paired: bool, resamples: int = 2000) -> dict:
    """B − A written out, {task or "avg": (difference, low, high)} ×100 from `tasks` {task: (metric, gold, A's
    predictions per seed, B's)}: one generator (seed 0) draws each task's test rows, then (`paired`) one set of seed
    indices for both sides, or B's seeds, then A's, in turn, row 0 the whole test set with every seed once; per
    resample each side's metric on the drawn rows for each drawn seed, averaged; the average over tasks per
    resample; the 2.5th and 97.5th percentiles of resamples 1..N."""
    rng = np.random.default_rng(0)
    differences = {}
    for task, (metric, gold, first, second) in tasks.items():
        rows = rng.integers(0, len(gold), size=(resamples + 1, len(gold)))
        rows[0] = np.arange(len(gold))
        if paired:  # seed index i is the same seed on both sides: one draw serves both
            seeds_b = seeds_a = rng.integers(0, len(second), size=(resamples + 1, len(second)))
        else:
            seeds_b, seeds_a = (rng.integers(0, len(side), size=(resamples + 1, len(side)))
                                for side in (second, first))
        seeds_b[0], seeds_a[0] = np.arange(len(second)), np.arange(len(first))
        score = (lambda g, p: np.mean(g == p)) if metric == "accuracy" else (lambda g, p: pearsonr(g, p)[0])
        values = []
        for drawn, drawn_b, drawn_a in zip(rows, seeds_b, seeds_a):
            b, a = (np.mean([score(gold[drawn], np.asarray(side[seed])[drawn]) for seed in picked])
                    for side, picked in ((second, drawn_b), (first, drawn_a)))
            values.append(100 * (b - a))
        differences[task] = np.array(values)
    differences["avg"] = np.mean(list(differences.values()), axis=0)
    return {name: (values[0], *np.percentile(values[1:], [2.5, 97.5])) for name, values in differences.items()}


def direct_intervals(a: float, b: float, seeds_a=(1, 2), seeds_b=(1, 2)) -> dict:
    """direct_bootstrap of this file's fixed predictions: A and B right (or correlated) by skill `a` and `b`, seeds
    paired when both ran the same ones."""
    tasks = {task: (metric, _labels(task), [_predictions(task, a, seed) for seed in seeds_a],
                    [_predictions(task, b, seed) for seed in seeds_b]) for task, metric in TASKS.items()}
    return direct_bootstrap(tasks, paired=tuple(seeds_a) == tuple(seeds_b))


@pytest.mark.parametrize("seeds_b, design", [((1, 2), "paired"), ((1, 2, 3), "per side"), ((2, 3), "per side")])
def test_compare_gives_the_interval_a_direct_implementation_gives(tmp_path, seeds_b, design):
    """Both designs: the same seeds on both sides are paired; more seeds, or as many but others, are drawn per side."""
    skills_a, skills_b = {"full": 0.6, "no_pretrain": 0.5}, {"full": 0.8, "no_pretrain": 0.5}
    first = Side("a", project(tmp_path / "a", skills_a))
    second = Side("b", project(tmp_path / "b", skills_b, seeds=seeds_b))
    table = compare.compare(first, second, resamples=2000)  # the count the direct implementation draws
    assert list(table.method.unique()) == METHODS and list(table.task.unique()) == [*TASKS, "avg"]
    assert set(table.seeds) == {design}
    for method in METHODS:
        expected = direct_intervals(skills_a[method], skills_b[method], seeds_b=seeds_b)
        for task, (difference, low, high) in expected.items():
            row = table[(table.method == method) & (table.task == task)].iloc[0]
            expected_row = pytest.approx((difference, low, high), abs=1e-9)
            assert (row.difference, row.low, row.high) == expected_row, (method, task)
    gain = table[(table.method == "full") & (table.task == "sentiment")].iloc[0]
    # 80 % right against 60 % on a few rows: above 0, but near enough for 2,000 resamples to call it at the edge
    assert gain.low > 0 and gain.verdict in ("better", "at the edge")
    assert gain.b - gain.a == pytest.approx(gain.difference)


def test_an_experiment_against_itself_is_exactly_zero(tmp_path):
    """The same runs on both sides, the same seeds drawn for both: 0 [0, 0] on every row (drawing each side's seeds
    on its own, as before, read the same runs as two samples: an interval around 0 as wide as the seeds' spread)."""
    root = project(tmp_path / "a", {"full": 0.7, "no_pretrain": 0.6})
    side = Side("a", root)
    table = compare.compare(side, side)
    assert (table[["difference", "low", "high"]] == 0).all(axis=None)
    assert set(table.verdict) == {"no difference"} and set(table.seeds) == {"paired"}
    assert set(table.noise) == {"test examples and seeds"}
    markdown = compare.markdown(table, "a", "a")
    assert markdown.count(" | +0.0 [+0.0, +0.0] | no difference | paired |\n") == len(table) == 6
    assert "-0.0" not in markdown and "‡" not in markdown
    drawn_per_side = direct_bootstrap({"sentiment": ("accuracy", _labels("sentiment"), *[[_predictions(
        "sentiment", 0.7, seed) for seed in (1, 2)]] * 2)}, paired=False)["sentiment"]
    assert drawn_per_side[1] < 0 < drawn_per_side[2]  # what pairing the seeds removes
    assert compare.compare(side, Side("copy", root)).equals(table)  # the same runs under another name


def test_a_method_the_experiment_left_alone_reads_exactly_zero(tmp_path):
    """B changed full only: no_pretrain's runs are the same on both sides, so its rows read 0 [0, 0]."""
    first = Side("a", project(tmp_path / "a", {"full": 0.6, "no_pretrain": 0.5}))
    second = Side("b", project(tmp_path / "b", {"full": 0.8, "no_pretrain": 0.5}))
    table = compare.compare(first, second, resamples=2000)
    untouched, changed = table[table.method == "no_pretrain"], table[table.method == "full"]
    assert (untouched[["difference", "low", "high"]] == 0).all(axis=None)
    assert set(untouched.verdict) == {"no difference"}
    assert (changed.high - changed.low > 0).all() and changed.low.iloc[0] > 0


def test_the_seed_design_is_a_column_and_the_footnote_says_what_each_means(tmp_path):
    first = Side("a", project(tmp_path / "a", {"full": 0.6, "no_pretrain": 0.5}))
    second = Side("b", project(tmp_path / "b", {"full": 0.8, "no_pretrain": 0.5}, seeds=(1, 2, 3)))
    table = compare.compare(first, second, resamples=2000)
    markdown = compare.markdown(table, "a", "b")
    assert "| verdict | seeds |" in markdown and markdown.count("| per side |") == len(table)
    assert "*seeds*: paired: both sides ran the same seeds" in markdown
    assert "per side: the sides ran different seeds, and each side's are drawn on their own" in markdown
    assert compare.csv(table).splitlines()[1].endswith(",test examples and seeds,per side,2000")


def test_one_seed_a_side_is_said_to_cover_the_test_rows_only(tmp_path):
    first = Side("a", project(tmp_path / "a", {"full": 0.6, "no_pretrain": 0.5}, seeds=(1,)))
    second = Side("b", project(tmp_path / "b", {"full": 0.8, "no_pretrain": 0.5}, seeds=(1,)))
    table = compare.compare(first, second)
    assert set(table.noise) == {"test examples only (one seed)"}
    assert "‡ a side ran one seed: the interval covers the test examples only" in compare.markdown(table, "a", "b")


@pytest.mark.parametrize("change", [{"max_eval_examples": 40}, {"test_text": "another row"}])
def test_experiments_scored_on_different_test_rows_are_refused(tmp_path, change):
    skills = {"full": 0.7, "no_pretrain": 0.6}
    first, second = Side("a", project(tmp_path / "a", skills)), Side("b", project(tmp_path / "b", skills, **change))
    with pytest.raises(UserError, match=r"^task 'sentiment': a and b scored different test rows .*not compared$"):
        compare.compare(first, second)


def test_an_experiment_without_runs_names_the_stage_that_makes_them(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    side = Side("a", project(tmp_path / "a", {"full": 0.7, "no_pretrain": 0.6}))
    with pytest.raises(UserError, match=r"^empty has no fine-tuning runs .*the finetune stage makes them"):
        compare.compare(side, Side("empty", empty))


def test_the_table_is_written_as_csv_with_every_number(tmp_path):
    side = Side("a", project(tmp_path / "a", {"full": 0.7, "no_pretrain": 0.6}))
    lines = compare.csv(compare.compare(side, side)).splitlines()
    assert lines[0] == ",".join(compare.COLUMNS) and len(lines) == 1 + len(METHODS) * (len(TASKS) + 1)


def test_a_name_that_is_no_experiment_or_revision_is_one_line_naming_the_fix(tmp_path):
    import subprocess

    from dvc.repo import Repo

    from gpt1.eval.compare import opened

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    Repo.init(str(tmp_path)).close()
    for committed in (False, True):  # an empty repository (it raised scmrepo's own error), then one commit
        if committed:
            subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "dvc",
                            "--allow-empty"], cwd=tmp_path, check=True)
        with pytest.raises(UserError, match=r"'no-such-run' is neither an experiment .* `dvc exp pull"):
            with opened(tmp_path, ["workspace", "no-such-run"]):
                pass


def _dvc_project_with_a_run(folder):
    """A git + DVC project whose one stage writes a fine-tuning run's predictions, run and committed."""
    import subprocess

    from dvc.repo import Repo

    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    Repo.init(str(folder)).close()
    run = "results/finetune/full/t/seed1"
    (folder / "dvc.yaml").write_text(yaml.safe_dump({"stages": {"finetune": {
        "cmd": f"mkdir -p {run} && echo '{{\"index\": 0, \"label\": 1, \"prediction\": 1}}' > "
               f"{run}/predictions_test.jsonl", "outs": ["results/finetune"]}}}))
    subprocess.run([sys.executable, "-m", "dvc", "repro", "-q"], cwd=folder, check=True)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "add", "-A"], cwd=folder, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "run"], cwd=folder, check=True)


def test_a_revision_whose_outputs_are_not_cached_names_the_fix_this_repository_allows(tmp_path):
    """Without a DVC remote there is nothing to pull: the error says to commit one's own run and compare with it;
    with a remote, to pull."""
    import shutil

    from dvc.repo import Repo

    from gpt1.eval.compare import opened

    _dvc_project_with_a_run(tmp_path)
    shutil.rmtree(tmp_path / ".dvc" / "cache")  # as in a clone whose dvc.lock was written on another machine
    with pytest.raises(UserError) as error:
        with opened(tmp_path, ["HEAD"]):
            pass
    assert "no DVC remote is set" in str(error.value) and "git commit dvc.lock" in str(error.value)
    assert "dvc pull" not in str(error.value)
    with Repo(str(tmp_path)) as repo:
        with repo.config.edit() as config:
            config["remote"]["shared"] = {"url": str(tmp_path / "remote")}
    with pytest.raises(UserError, match=r"fetch them with `dvc pull`"):
        with opened(tmp_path, ["HEAD"]):
            pass


def test_a_side_whose_params_predate_the_methods_key_is_read_by_its_older_name(tmp_path):
    """A revision from before `finetune.methods` calls the key `finetune.variants`; compare reads it as the same."""
    skill = {"full": 0.7, "no_pretrain": 0.6}
    new = Side("new", project(tmp_path / "new", skill))
    old_root = project(tmp_path / "old", skill)
    params = yaml.safe_load((old_root / "params.yaml").read_text())
    params["finetune"]["variants"] = params["finetune"].pop("methods")
    (old_root / "params.yaml").write_text(yaml.safe_dump(params))
    old = Side("old", old_root)
    assert old.order() == new.order()
    assert compare.compare(old, new).equals(compare.compare(new, new))


def test_a_resample_count_below_one_is_one_clear_error(tmp_path):
    import argparse

    from gpt1.commands import compare as command
    from gpt1.errors import UserError

    with pytest.raises(UserError, match="--resamples 0: give a positive count"):
        command.main(argparse.Namespace(a="a", b="b", output=None, force=False, resamples=0), None)
