"""The embedded default on the tiny profile, end to end through DVC, applied the way a user applies a profile:
the `dvc exp run -S ...` line that `gpt1 profile profiles/tiny.yaml` prints.

It runs in a fresh copy of the repository (a temporary git repo, as a user's clone), on real data from the
pinned archives (those in data/cache, or GPT1_CACHE, linked into the run's own archive cache; the rest fetched
there for the session), but for BIG-bench's: its 358 MB sdist is replaced by the fixture's rows in its layout
(tests/fixtures_packaged.py), pinned through `data.mirrors` with their own sha256 and found in the run's archive
cache, as a user whose registry lacks the file would give a copy of it. A `dvc repro` after the experiment must
have nothing to do. tests/test_paper_pipeline.py runs the paper profile through Snakemake, and tests/test_dag.py
checks that both tools build the same jobs from dvc.yaml for every shipped profile.
"""

import atexit
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from fixtures_packaged import write_bigbench_stand_in
from gpt1.data.catalog import BIGBENCH
from gpt1.params.files import compose_raw

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

TINY = ["profiles/tiny.yaml"]
OUTPUTS = ["results/ablation.csv", "results/scores.csv", "results/layer_transfer.csv",
           "results/layer_transfer_trend.csv", "results/zero_shot.csv", "results/transfer_curve.csv",
           "results/transfer_curve_trend.csv"]

pytestmark = [pytest.mark.slow, pytest.mark.readme_route]  # `make test` runs it: the README's own route


def _tiny_params() -> dict:
    """A fresh copy's params with the tiny profile applied (its data.mirrors pins the BIG-bench stand-in)."""
    raw = compose_raw(ROOT / "params.yaml", [ROOT / path for path in TINY])[0]
    raw["data"]["mirrors"] = _archive_cache()[1]
    return raw


def _git(*arguments: str, cwd: Path) -> None:
    subprocess.run(["git", "-c", "user.name=test", "-c", "user.email=test@example.com", *arguments], cwd=cwd,
                   check=True, capture_output=True)


def _fresh_copy(destination: Path) -> Path:
    """The working tree's files that git tracks or would track (new, not ignored) in a new git repository with one
    commit, like a clone of the working tree once committed."""
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, text=True, check=True)
    for name in filter(None, files.stdout.split("\0")):
        if (ROOT / name).is_file():
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, destination / name)
    params = destination / "params.yaml"
    text = params.read_text()
    assert text.count("\n  mirrors: {}") == 1, "params.yaml's data.mirrors is no longer `{}` on a line of its own"
    mirror = "".join(f"\n    {source}:\n      url: {entry['url']}\n      sha256: {entry['sha256']}"
                     for source, entry in _archive_cache()[1].items())
    params.write_text(text.replace("\n  mirrors: {}", "\n  mirrors:" + mirror))
    for arguments in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "tiny"]):
        _git(*arguments, cwd=destination)
    return destination


@functools.cache
def _archive_cache() -> tuple[Path, dict]:
    """The runs' archive cache: a link to each archive of the user's (data/cache, or GPT1_CACHE) but BIG-bench's, and
    the stand-in in its place; with the `data.mirrors` entry that pins the stand-in. Removed when the tests end
    (the links, never what they point to)."""
    folder = Path(tempfile.mkdtemp(prefix="gpt1-test-archives-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    users = Path(os.environ.get("GPT1_CACHE", ROOT / "data" / "cache"))
    for archive in sorted(users.iterdir()) if users.is_dir() else []:
        if archive.is_file() and archive.name != BIGBENCH.filename:
            (folder / archive.name).symlink_to(archive.resolve())
    sha256 = write_bigbench_stand_in(folder / BIGBENCH.filename)
    return folder, {"bigbench": {"url": f"https://bigbench.invalid/{BIGBENCH.filename}", "sha256": sha256}}


def _run(command: list[str], cwd: Path, **environment: str) -> str:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
           "GPT1_CACHE": str(_archive_cache()[0]), **environment}
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    assert result.returncode == 0, f"{' '.join(command)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result.stdout + result.stderr


BEFORE_THE_RUN: dict[str, str] = {}  # what the dry runs printed on the fresh copy
PARAMS_READ = "params_read.jsonl"  # beside the run's repository: the params keys each command read


@pytest.fixture(scope="module")
def dvc_repo(tmp_path_factory):
    repo = _fresh_copy(tmp_path_factory.mktemp("dvc"))
    BEFORE_THE_RUN["dvc status"] = _run([str(BIN / "dvc"), "status"], repo)
    BEFORE_THE_RUN["dvc repro --dry --force"] = _run([str(BIN / "dvc"), "repro", "--dry", "--force"], repo)
    BEFORE_THE_RUN["snakemake -n"] = _run([str(BIN / "snakemake"), "results/ablation.csv", "-n", "--cores", "1",
                                           "--configfile", *TINY], repo)  # --configfile takes every word after it
    BEFORE_THE_RUN["untouched"] = str(not (repo / "data").exists() and not (repo / "results").exists())
    command = subprocess.run([str(BIN / "gpt1"), "profile", *TINY], cwd=repo, capture_output=True, text=True,
                             check=True).stdout.strip()
    assert command.startswith("dvc exp run -S ")
    _run(["bash", "-c", command], repo, GPT1_PARAMS_TRACE=str(repo.parent / PARAMS_READ))  # gpt1/params/trace.py
    return repo


def test_every_stage_declares_exactly_the_params_it_reads(dvc_repo):
    """A key a stage reads but does not declare leaves DVC blind to its changes (stale results); one it declares
    but never reads re-runs it for nothing. The run recorded what each command read (GPT1_PARAMS_TRACE); a
    declared section (e.g. `model`) covers every key under it, and must itself be read somewhere."""
    from gpt1.pipeline import dag

    read_by_command: dict[str, set[str]] = {}
    for line in (dvc_repo.parent / PARAMS_READ).read_text().splitlines():
        record = json.loads(line)
        read_by_command.setdefault(" ".join(record["argv"]), set()).update(record["read"])
    under = lambda key, section: key == section or key.startswith(section + ".")  # noqa: E731
    mismatches, read_by_stage = {}, {}
    for stage in dag.resolve(dvc_repo / "dvc.yaml", yaml.safe_load((dvc_repo / "params.yaml").read_text())):
        read = read_by_command[stage.command.removeprefix("gpt1 ")]  # every stage ran, traced
        undeclared = sorted(key for key in read if not any(under(key, declared) for declared in stage.params))
        if undeclared:
            mismatches[f"{stage.name}: read, not declared"] = undeclared
        # a foreach/matrix stage declares once for all its jobs (one job may not read a key another does)
        declared_by, stage_read = read_by_stage.setdefault(stage.name.split("@")[0], (stage.params, set()))
        stage_read.update(read)
    for name, (declared, read) in read_by_stage.items():
        unread = sorted(section for section in declared if not any(under(key, section) for key in read))
        if unread:
            mismatches[f"{name}: declared, not read"] = unread
    assert not mismatches, json.dumps(mismatches, indent=1)


def test_a_fresh_clone_says_what_would_run_and_writes_nothing(dvc_repo):
    """`dvc status` and `dvc repro --dry --force` on a clean checkout (plain `dvc repro --dry` fails inside DVC
    there: its issue 9818); Snakemake's dry run of the headline target lists every job it needs."""
    assert BEFORE_THE_RUN["untouched"] == "True"  # no data/, no results/: the dry runs wrote nothing
    assert "deleted:            data/raw" in BEFORE_THE_RUN["dvc status"]
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    for stage in stages:
        assert f"Running stage '{stage}" in BEFORE_THE_RUN["dvc repro --dry --force"], stage
    planned = BEFORE_THE_RUN["snakemake -n"]
    for rule in ("download", "pretrain", "finetune", "evaluate", "ablation"):
        assert f"rule {rule}:" in planned, rule
    assert "rule layer_transfer:" not in planned  # not what Table 5 reads


def test_the_experiment_ran_with_the_profile_applied(dvc_repo):
    assert yaml.safe_load((dvc_repo / "params.yaml").read_text()) == _tiny_params()
    for output in OUTPUTS:
        assert (dvc_repo / output).stat().st_size > 0, output


def test_ablation_table_has_every_method_and_task(dvc_repo):
    table = pd.read_csv(dvc_repo / "results/ablation.csv", index_col="method")
    assert list(table.index) == ["full", "no_pretrain", "no_aux_lm", "lstm"]
    tasks = _tiny_params()["data"]["tasks"]
    assert list(table.columns) == ["avg", *tasks]
    assert table.notna().all().all()
    # avg is the mean of the unrounded task scores; the CSV keeps two decimals of each
    assert table["avg"].tolist() == pytest.approx(table[tasks].mean(axis=1).tolist(), abs=0.011)
    assert "## Findings" in (dvc_repo / "results/ablation.md").read_text()


def independent_table5(repo: Path, tasks: list[str], methods: list[str], seeds: list[int]) -> pd.DataFrame:
    """Table 5 recomputed from the prediction files alone, with numpy and scipy (not gpt1.eval): the
    first metric of each task, x 100, mean over seeds."""
    from scipy.stats import pearsonr

    cells = {}
    for task in tasks:
        metric = json.loads((repo / "data/tasks" / task / "task.json").read_text())["metrics"][0]
        for method in methods:
            values = []
            for seed in seeds:
                path = repo / "results/finetune" / method / task / f"seed{seed}" / "predictions_test.jsonl"
                rows = [json.loads(line) for line in path.read_text().splitlines()]
                gold = np.array([row["label"] for row in rows], dtype=float)
                predicted = np.array([row["prediction"] for row in rows], dtype=float)
                assert metric in ("accuracy", "pearson"), metric
                values.append(np.mean(gold == predicted) if metric == "accuracy" else pearsonr(gold, predicted)[0])
            cells[method, task] = 100 * np.mean(values)
    return pd.DataFrame({task: [cells[method, task] for method in methods] for task in tasks}, index=methods)


def test_table5_cells_equal_an_independent_computation_from_the_predictions(dvc_repo):
    params = _tiny_params()
    tasks, methods = params["data"]["tasks"], params["finetune"]["methods"]
    table = pd.read_csv(dvc_repo / "results/ablation.csv", index_col="method")
    expected = independent_table5(dvc_repo, tasks, methods, params["finetune"]["seeds"])
    for task in tasks:
        assert table[task].tolist() == pytest.approx(expected[task].tolist(), abs=0.006), task  # 2 decimals


def test_tables_2_to_4_set_full_beside_the_paper_task_each_task_stands_for(dvc_repo):
    from gpt1.paper import COMPARED_WITH, PAPER_SCORES

    params = _tiny_params()
    tasks = params["data"]["tasks"]
    table = pd.read_csv(dvc_repo / "results/paper_tables.csv").set_index("task")
    assert sorted(table.index) == sorted(tasks)
    expected = independent_table5(dvc_repo, tasks, ["full"], params["finetune"]["seeds"])
    for task in tasks:
        row, paper_task = table.loc[task], COMPARED_WITH[task]
        assert row.paper_task == paper_task and row.paper == PAPER_SCORES[paper_task].value
        assert row["mean"] == pytest.approx(expected.loc["full", task], abs=0.006)
        assert row.low - 0.01 <= row["mean"] <= row.high + 0.01 and row.relation == "stand-in"
        assert row.difference == pytest.approx(row["mean"] - row.paper, abs=0.011)
    assert "## Table 2: natural language inference" in (dvc_repo / "results/paper_tables.md").read_text()


def test_the_first_seeds_model_is_kept_and_predicts_as_the_stage_did(dvc_repo):
    """`gpt1 predict` on a DVC-tracked kept run reproduces the stage's test predictions; other seeds keep none."""
    params = _tiny_params()
    task, (first, *others) = params["data"]["tasks"][0], params["finetune"]["seeds"]
    run = dvc_repo / "results/finetune/full" / task
    assert (run / f"seed{first}" / "model.safetensors").is_file()
    assert not any((run / f"seed{seed}" / "model.safetensors").exists() for seed in others)
    stage = [json.loads(line) for line in (run / f"seed{first}" / "predictions_test.jsonl").read_text().splitlines()]
    from gpt1.data.records import read_examples
    from gpt1.data.task_data import seeded_subset

    family = json.loads((dvc_repo / "data/tasks" / task / "task.json").read_text())["family"]
    rows = seeded_subset(read_examples(dvc_repo / "data/tasks" / task / "test.jsonl", family),
                         params["finetune"]["max_eval_examples"], params["seed"], task, "test")
    lines = "".join(json.dumps({k: v for k, v in vars(row).items() if k != "label"}) + "\n" for row in rows)
    result = subprocess.run([str(BIN / "gpt1"), "predict", "--run", str(run / f"seed{first}")], cwd=dvc_repo,
                            input=lines, capture_output=True, text=True, check=True)
    got = [json.loads(line) for line in result.stdout.splitlines()]
    assert [row["prediction"] for row in got] == [row["prediction"] for row in stage]


def test_figures_are_drawn(dvc_repo):
    import matplotlib.image

    for figure in ("results/zero_shot.png", "results/layer_transfer.png", "results/transfer_curve.png"):
        pixels = matplotlib.image.imread(dvc_repo / figure)
        assert len(set(map(tuple, pixels.reshape(-1, pixels.shape[-1]).round(2)))) > 10, figure  # not blank


def test_dvc_plots_draws_table5_the_curves_and_each_figure_once(dvc_repo):
    shown = json.loads(subprocess.run([str(BIN / "dvc"), "plots", "show", "--json"], cwd=dvc_repo, check=True,
                                      capture_output=True, text=True).stdout)["data"]
    table = next(plots for name, plots in shown.items() if name.startswith("Table 5"))
    assert [row["method"] for row in table[0]["content"]["data"]["values"]] == ["full", "no_pretrain", "no_aux_lm",
                                                                                 "lstm"]
    figures = ("results/zero_shot.png", "results/layer_transfer.png", "results/transfer_curve.png")
    assert {"Pretraining validation loss", *figures} <= set(shown)
    assert all(len(shown[figure]) == 1 for figure in figures)


def test_second_dvc_repro_does_nothing(dvc_repo):
    """Only user_files runs (always_changed: it fingerprints the files behind params' paths); with its
    fingerprints unchanged, no other stage does."""
    output = _run([str(BIN / "dvc"), "repro"], dvc_repo)
    ran = [line for line in output.splitlines() if line.startswith("Running stage")]
    assert ran == ["Running stage 'user_files':"], output


def _params_edit(change):
    """An edit of params.yaml: `change(params)` edits the parsed file in place."""
    def edit(text: str) -> str:
        params = yaml.safe_load(text)
        change(params)
        return yaml.safe_dump(params, sort_keys=False)
    return edit


def _new_method(params: dict) -> None:
    params["methods"]["no_aux_lm_copy"] = dict(params["methods"]["no_aux_lm"], label="a copy of w/o aux LM")
    params["finetune"]["methods"].append("no_aux_lm_copy")


def _set(dotted: str, value):
    def change(params: dict) -> None:
        *sections, key = dotted.split(".")
        for section in sections:
            params = params[section]
        params[key] = value
    return change


def _tiny_jobs(stage: str, *values: str) -> set[str]:
    """The names of a stage's jobs on the tiny profile whose name holds every one of `values`."""
    from gpt1.pipeline import dag

    return {job.name for job in dag.resolve(ROOT / "dvc.yaml", _tiny_params())
            if job.declared == stage and all(value in job.name for value in values)}


# The edit table (docs/development.md): an edit, the file it edits, how, and the stages `dvc status` then names
# after `dvc repro user_files` refreshed the code fingerprints; each edit is undone before the next.
EDITS = {
    "a comment in a module every stage imports": (
        "gpt1/layout.py", lambda text: text + "\n# a comment changes no output\n", set()),
    "a word in the model's docstring": (
        "gpt1/model/lm.py", lambda text: text.replace('"""', '"""Indeed, ', 1), set()),
    "a new method": (
        "params.yaml", _params_edit(_new_method),
        {"starting_model@no_aux_lm_copy", "finetune@no_aux_lm_copy-sts_b", "finetune@no_aux_lm_copy-social_iqa",
         "evaluate", "ablation", "transfer_figure"}),
    # ablation lists the methods' entries whole (their labels and findings): it runs after those jobs anyway
    "one method's rate": (
        "params.yaml", _params_edit(_set("methods.no_pretrain.lr", 2e-3)),
        {*_tiny_jobs("finetune", "no_pretrain"), "ablation"}),
    "a figure's setting": (
        "params.yaml", _params_edit(_set("analysis.transfer_curve_steps", [1])),
        {"transfer_curve@social_iqa", "transfer_figure"}),
    "a real code change in the model": (
        "gpt1/model/lm.py", lambda text: text + "\n\ndef _unused() -> int:\n    return 1\n",
        {"pretrain@transformer", "pretrain@lstm", "layer_transfer@social_iqa", "transfer_curve@social_iqa", "zeroshot",
         *_tiny_jobs("finetune")}),
    "one more seed": (
        "params.yaml", _params_edit(_set("finetune.seeds", [1, 2])),
        {*_tiny_jobs("finetune"), "evaluate", "ablation", "paper_tables"}),
}


def test_an_edit_re_runs_exactly_the_stages_it_affects(dvc_repo):
    """On the finished run, each edit of the table marks exactly its stages in `dvc status` (after `dvc repro
    user_files`, which refreshes the code fingerprints and runs first in every `dvc repro`); an edit that cannot change
    an output makes `dvc repro` run nothing but user_files and Snakemake plan nothing, while a real code edit makes
    Snakemake plan the stages that run it. Each edit is undone and the fingerprints refreshed before the next, so the
    run is left as it was."""
    dvc = str(BIN / "dvc")
    # The copy's own gpt1 runs, as a user's clone runs its own (the venv's editable install is this checkout's): the
    # fingerprints are of the code that runs.
    own_code = {"PYTHONPATH": str(dvc_repo)}
    snakemake = [str(BIN / "snakemake"), "-n", "--cores", "1", "--configfile", *TINY]  # every output (rule all)
    nothing = "Nothing to be done"
    assert nothing in _run(snakemake, dvc_repo, **own_code)
    for edit, (name, change, expected) in EDITS.items():
        path = dvc_repo / name
        before = path.read_text(encoding="utf-8")
        path.write_text(change(before), encoding="utf-8")
        try:
            code = name.endswith(".py")
            if code:  # the Snakefile refreshes the fingerprints before it plans, as user_files does for DVC
                plan = _run(snakemake, dvc_repo, **own_code)
                assert (nothing in plan) == (not expected), (edit, plan[-2000:])
                assert all(f"rule {stage.split('@')[0]}:" in plan for stage in expected), (edit, plan[-2000:])
            if code and not expected:
                assert _stages_run(_run([dvc, "repro"], dvc_repo, **own_code)) == {"user_files"}, edit
            elif code:
                _run([dvc, "repro", "user_files"], dvc_repo, **own_code)
            marked = _changed_stages(_run([dvc, "status"], dvc_repo, **own_code)) - {"user_files"}
            assert marked == expected, (edit, sorted(marked ^ expected))
        finally:
            path.write_text(before, encoding="utf-8")
            if name.endswith(".py"):
                _run([dvc, "repro", "user_files"], dvc_repo, **own_code)
    assert _changed_stages(_run([dvc, "status"], dvc_repo, **own_code)) == {"user_files"}


HEADLINE = {"results/metrics.json": {"average": ["full", "no_pretrain", "no_aux_lm", "lstm"],
                                     "full": _tiny_params()["data"]["tasks"]},
            "results/pretrain/transformer/headline.json": {"transformer": ["val_loss"]},
            "results/pretrain/lstm/headline.json": {"lstm": ["val_loss"]}}
HEADLINE_COLUMNS = [f"{group}.{name}" for keys in HEADLINE.values() for group, names in keys.items() for name in names]


def _exp_show(repo: Path, *flags: str) -> str:
    """What `dvc exp show` prints (stdout only: DVC may warn on stderr)."""
    return subprocess.run([str(BIN / "dvc"), "exp", "show", *flags], cwd=repo, capture_output=True, text=True,
                          check=True, env={**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}).stdout


def test_committing_the_results_fills_dvc_exp_shows_baseline_row_with_the_headline_metrics_only(dvc_repo):
    """Nothing under results/ comes committed (Snakemake would take it as built); a user who ran the pipeline
    commits what it wrote and `dvc exp show` compares experiments against that row. It declares as metrics only
    Table 5's average per method, full's score per task and each model's validation loss: the table DVC renders
    has those 10 metric columns, first, under their own names. (Runs last: it commits.)"""
    _git("add", "-A", cwd=dvc_repo)
    _git("commit", "-qm", "run", cwd=dvc_repo)
    shown = json.loads(_exp_show(dvc_repo, "--json"))
    baseline = next(row for row in shown if row.get("rev") != "workspace")
    metrics = baseline["data"]["metrics"]
    declared = {path: {group: list(values) for group, values in metrics[path]["data"].items()} for path in metrics}
    assert declared == HEADLINE
    header = _exp_show(dvc_repo, "--csv").splitlines()[0].split(",")
    fixed = ["Experiment", "rev", "typ", "Created", "parent"]  # (State and Executor: dropped while empty)
    assert header[:len(fixed)] == fixed, header
    # the metrics come next (the pretraining files first, in DVC's order), unprefixed, then params and deps
    assert sorted(header[len(fixed):len(fixed) + len(HEADLINE_COLUMNS)]) == sorted(HEADLINE_COLUMNS), header
    assert not any(":" in column for column in header), header  # no file-prefixed (clashing) names
    assert len(HEADLINE_COLUMNS) <= 25


def _stages_run(output: str) -> set[str]:
    return {line.split("'")[1] for line in output.splitlines() if line.startswith("Running stage")}


@pytest.mark.extended  # the README's sharing section, a second clone and remotes: `make test-slow` runs it
def test_a_second_clone_pulls_the_trained_models_and_reruns_only_what_changed(dvc_repo, tmp_path):
    """README "Share a trained model": one machine runs and pushes to a DVC remote (a local folder here; S3, GCS,
    SSH take the same commands) and its commits to a git remote; a second clone pulls, has nothing to re-run, and
    an experiment on a fine-tuning setting re-runs fine-tuning and what follows only, from the pulled weights.
    The experiment travels back through the git remote with `dvc exp push` / `dvc exp pull`."""
    dvc, remote, origin = str(BIN / "dvc"), tmp_path / "dvc-remote", tmp_path / "origin.git"
    _run([dvc, "remote", "add", "-d", "shared", str(remote)], dvc_repo)
    _git("add", "-A", cwd=dvc_repo)
    _git("commit", "-qm", "results and the shared remote", "--allow-empty", cwd=dvc_repo)
    _run([dvc, "push"], dvc_repo)
    subprocess.run(["git", "init", "-q", "--bare", str(origin)], check=True)
    _git("push", "-q", str(origin), "HEAD:refs/heads/main", cwd=dvc_repo)
    _git("remote", "add", "origin", str(origin), cwd=dvc_repo)

    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "-b", "main", str(origin), str(clone)], check=True)
    _run([dvc, "pull"], clone)
    for pulled in ("data/raw", "data/tasks", "data/bpe", "data/pretrain/transformer/model.safetensors",
                   "results/finetune"):
        assert (clone / pulled).exists(), pulled
    assert _stages_run(_run([dvc, "repro"], clone)) == {"user_files"}

    output = _run([dvc, "exp", "run", "-S", "finetune.lr=0.002", "-n", "higher-lr"], clone)
    ran = _stages_run(output)
    assert any(stage.startswith("finetune@") for stage in ran), output
    assert all(stage.split("@")[0] in {"user_files", "finetune", "layer_transfer", "transfer_curve", "evaluate",
                                       "ablation", "paper_tables", "layer_figure", "transfer_figure"}
               for stage in ran), sorted(ran)

    _run([dvc, "exp", "push", "origin", "higher-lr"], clone)
    _run([dvc, "exp", "pull", "origin", "higher-lr"], dvc_repo)
    listed = subprocess.run([dvc, "exp", "list", "--name-only"], cwd=dvc_repo, capture_output=True, text=True,
                            check=True).stdout.split()
    assert "higher-lr" in listed, listed
    PULLED["clone"] = clone  # its workspace holds higher-lr's outputs: the compare tests read them as files

    # A changed LSTM checkpoint: only what reads the LSTM would re-run. DVC sees the weights' records first (a
    # finetune job depends on its method's record: gpt1/train/starting_weights.py); once they are rewritten,
    # the LSTM's fine-tuning job and nothing else of fine-tuning, layer transfer or the transfer curve.
    with open(clone / "data/pretrain/lstm/model.safetensors", "ab") as checkpoint:
        checkpoint.write(b" ")
    changed = _changed_stages(_run([dvc, "status"], clone))
    assert "pretrain@lstm" in changed and "starting_model@lstm" in changed, changed
    assert not any(name.startswith(("finetune@", "layer_transfer@", "transfer_curve@")) for name in changed), changed
    _run([dvc, "commit", "-f", "pretrain@lstm"], clone)  # take the changed weights as the stage's own
    assert _stages_run(_run([dvc, "repro", "--single-item", "starting_model"], clone)) == {
        f"starting_model@{method}" for method in _tiny_params()["finetune"]["methods"]}
    changed = _changed_stages(_run([dvc, "status"], clone))
    assert {name for name in changed if name.startswith("finetune@")} == {
        f"finetune@lstm-{task}" for task in _tiny_params()["data"]["tasks"]}
    assert not any(name.startswith(("layer_transfer@", "transfer_curve@")) for name in changed), changed


PULLED: dict[str, Path] = {}  # the second clone, once an experiment ran there and came back with `dvc exp pull`


@pytest.mark.extended  # reads the second clone's experiment
def test_dvc_exp_show_only_changed_shows_the_changed_param_and_the_headline_metrics(dvc_repo):
    """After one `dvc exp run -S finetune.lr=...` (made in the second clone and pulled here)."""
    assert "clone" in PULLED, "needs the experiment of test_a_second_clone_pulls_the_trained_models_..."
    header = _exp_show(dvc_repo, "--only-changed", "--csv").splitlines()[0].split(",")
    assert "finetune.lr" in header and "seed" not in header, header
    assert {"average.full", "full.sts_b"} <= set(header), header  # fine-tuning changed; pretraining did not:
    assert "transformer.val_loss" not in header, header


def _test_predictions(repo: Path, method: str, task: str, seeds: list[int]) -> tuple[np.ndarray, list[np.ndarray]]:
    """(gold labels, predictions per seed) of a run's predictions_test.jsonl files, read as plain files."""
    by_seed = []
    for seed in seeds:
        path = repo / "results/finetune" / method / task / f"seed{seed}" / "predictions_test.jsonl"
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        gold = np.array([row["label"] for row in rows], dtype=float)
        by_seed.append(np.array([row["prediction"] for row in rows], dtype=float))
    return gold, by_seed


@pytest.mark.extended  # reads the second clone's experiment
def test_gpt1_compare_gives_the_interval_an_independent_computation_gives_and_touches_nothing(dvc_repo, tmp_path):
    """`gpt1 compare workspace higher-lr` reads the experiment from DVC's cache (pulled with it); its intervals are
    direct_bootstrap's (tests/test_compare.py) on the two sides' prediction files; an experiment against itself
    is 0 [0, 0]; the workspace is left as it was."""
    from test_compare import direct_bootstrap

    assert "clone" in PULLED, "needs the experiment of test_a_second_clone_pulls_the_trained_models_..."
    clone, params = PULLED["clone"], _tiny_params()
    status = subprocess.run(["git", "status", "--porcelain"], cwd=dvc_repo, capture_output=True, text=True).stdout
    headline = (dvc_repo / "results/metrics.json").read_bytes()
    _run([str(BIN / "gpt1"), "compare", "workspace", "higher-lr", "--output", str(tmp_path / "lr.csv"),
          "--resamples", "2000"], dvc_repo)  # direct_bootstrap's count
    table = pd.read_csv(tmp_path / "lr.csv")
    seeds = params["finetune"]["seeds"]
    for method in params["finetune"]["methods"]:
        tasks = {}
        for task in params["data"]["tasks"]:
            metric = json.loads((dvc_repo / "data/tasks" / task / "task.json").read_text())["metrics"][0]
            gold, first = _test_predictions(dvc_repo, method, task, seeds)
            gold_b, second = _test_predictions(clone, method, task, seeds)
            assert np.array_equal(gold, gold_b)
            tasks[task] = (metric, gold, first, second)
        for column, expected in direct_bootstrap(tasks, paired=True).items():  # both sides ran the same seeds
            row = table[(table.method == method) & (table.task == column)].iloc[0]
            assert (row.difference, row.low, row.high) == pytest.approx(expected, abs=0.006), (method, column)
    assert not (table[["difference", "low", "high"]] == 0).all().all()  # the rate changed something
    _run([str(BIN / "gpt1"), "compare", "higher-lr", "higher-lr", "--output", str(tmp_path / "self.csv")], dvc_repo)
    itself = pd.read_csv(tmp_path / "self.csv")
    assert len(itself) == len(table) and (itself[["difference", "low", "high"]] == 0).all().all()
    assert subprocess.run(["git", "status", "--porcelain"], cwd=dvc_repo, capture_output=True, text=True).stdout == status
    assert (dvc_repo / "results/metrics.json").read_bytes() == headline


def _changed_stages(status: str) -> set[str]:
    """The stages `dvc status` lists as changed."""
    return {line.rstrip(":").strip() for line in status.splitlines() if line.endswith(":") and not line[:1].isspace()}
