"""Files behind paths in params (data.local_paths, bpe.import_from, pretrain.init_from) are dependencies: the
`user_files` stage fingerprints them, and DVC re-runs a reader when, and only when, its files change."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gpt1.params.schema import load_params
from gpt1.stages import user_files
from test_user_tasks import BAD, declared, write_files

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def params_with(tmp_path: Path, **paths) -> Path:
    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    raw["data"]["local_paths"] = {key: str(value) for key, value in paths.get("local_paths", {}).items()}
    raw["pretrain"]["init_from"] = str(paths["init_from"]) if "init_from" in paths else None
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def test_fingerprints_cover_every_file_and_change_only_with_content(tmp_path):
    books = tmp_path / "books"
    (books / "a").mkdir(parents=True)
    (books / "a" / "one.txt").write_text("Chapter one.")
    (books / "two.txt").write_text("Chapter two.")
    weights = tmp_path / "released.safetensors"
    weights.write_bytes(b"weights")
    params = load_params(params_with(tmp_path, local_paths={"books": books}, init_from=weights))
    out = tmp_path / "prints"

    user_files.main(None, params, out)
    local = json.loads((out / "local_paths.json").read_text())
    assert set(local["data.local_paths.books"]) == {"a/one.txt", "two.txt"}
    assert json.loads((out / "import_from.json").read_text()) == {}  # unset
    assert list(json.loads((out / "init_from.json").read_text())["pretrain.init_from"]) == ["released.safetensors"]
    assert sorted(user_files.watched_files(params)) == sorted(map(str, [books / "a/one.txt", books / "two.txt",
                                                                        weights]))

    stamp = (out / "local_paths.json").stat().st_mtime_ns
    os.utime(books / "two.txt")  # touched, same bytes: the fingerprint stays, file and time stamp
    user_files.main(None, params, out)
    assert (out / "local_paths.json").stat().st_mtime_ns == stamp
    (books / "two.txt").write_text("Chapter two, revised.")
    user_files.main(None, params, out)
    assert json.loads((out / "local_paths.json").read_text()) != local


@pytest.mark.slow
def test_dvc_reruns_the_reader_of_a_replaced_file_and_nothing_else(tmp_path):
    """The user_files stage exactly as dvc.yaml declares it, with one stage reading each fingerprint."""
    weights = tmp_path / "outside" / "released.safetensors"
    weights.parent.mkdir()
    weights.write_bytes(b"release 1")
    repo = tmp_path / "repo"
    repo.mkdir()
    params_with(repo, init_from=weights)
    stage = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]["user_files"]
    stage.pop("deps", None)  # it has none: DVC runs it every time
    readers = {name: {"cmd": f"cp data/user_files/{name}.json read_{name}.json",
                      "deps": [f"data/user_files/{name}.json"], "outs": [f"read_{name}.json"]}
               for name in ("local_paths", "import_from", "init_from")}
    (repo / "dvc.yaml").write_text(yaml.safe_dump({"stages": {"user_files": stage, **readers}}))
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}

    def dvc_repro() -> list[str]:
        result = subprocess.run([str(BIN / "dvc"), "repro"], cwd=repo, env=env, capture_output=True, text=True)
        assert result.returncode == 0, result.stdout + result.stderr
        return sorted(line.split("'")[1] for line in result.stdout.splitlines() if line.startswith("Running stage"))

    for command in (["git", "init", "-q"], [str(BIN / "dvc"), "init", "-q"]):
        subprocess.run(command, cwd=repo, check=True, env=env)
    assert dvc_repro() == ["import_from", "init_from", "local_paths", "user_files"]
    assert dvc_repro() == ["user_files"]  # always fingerprinted; no reader re-runs
    weights.write_bytes(b"release 2")
    assert dvc_repro() == ["init_from", "user_files"]
    assert "release 2" not in (repo / "read_init_from.json").read_text()  # a fingerprint, not the file
    shutil.rmtree(weights.parent)
    assert dvc_repro() == ["init_from", "user_files"]  # gone: its reader must run (and say so itself)
    assert json.loads((repo / "read_init_from.json").read_text()) == {
        "pretrain.init_from": {"<missing>": str(weights)}}


def test_user_data_fingerprints_exactly_the_files_prepare_reads_of_the_selected_entries(tmp_path):
    """data.user_tasks / data.user_corpus: only selected entries, and of a corpus part only the .txt/.jsonl files
    its reader reads (gpt1/data/user_paths.py), named relative to the folder or to a glob's fixed part."""
    from gpt1.params.schema import parse_params
    from gpt1.data.user_tasks import read_documents

    mine = tmp_path / "mine"
    (mine / "notes" / "2024").mkdir(parents=True)
    (mine / "notes" / "2024" / "jan.txt").write_text("January.")
    (mine / "notes" / "feb.jsonl").write_text('{"text": "February."}\n')
    (mine / "notes" / "README.md").write_text("not read")
    (mine / "train.csv").write_text("review,stars\nGood.,positive\nBad.,negative\n")
    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    task = {"family": "classification", "text": "review", "label": "stars", "labels": ["negative", "positive"]}
    raw["data"]["user_tasks"] = {"my_reviews": {**task, "train": str(mine / "train.csv")},
                                 "unused": {**task, "train": str(mine / "elsewhere.csv")}}
    raw["data"]["user_corpus"] = {"my_notes": str(mine / "notes"), "my_glob": str(mine / "no*s" / "**" / "*.txt"),
                                  "unused_notes": str(mine / "gone")}
    raw["data"]["tasks"] = [*raw["data"]["tasks"], "my_reviews"]
    raw["data"]["corpus"] = [*raw["data"]["corpus"], "my_notes", "my_glob"]
    params = parse_params(raw)
    out = tmp_path / "prints"

    user_files.main(None, params, out)
    prints = json.loads((out / "user_data.json").read_text())
    assert set(prints) == {"data.user_tasks.my_reviews.train", "data.user_corpus.my_notes",
                           "data.user_corpus.my_glob"}
    assert set(prints["data.user_corpus.my_notes"]) == {"2024/jan.txt", "feb.jsonl"}
    assert set(prints["data.user_corpus.my_glob"]) == {"notes/2024/jan.txt"}  # below the glob's fixed part
    assert list(read_documents("my_notes", str(mine / "notes"))) == ["January.", "February."]  # what is read
    watched = set(user_files.watched_files(params))
    assert str(mine / "notes" / "README.md") not in watched and str(mine / "train.csv") in watched

    (mine / "train.csv").write_text("review,stars\nGood.,positive\nAwful.,negative\n")  # one row changed
    user_files.main(None, params, out)
    changed = json.loads((out / "user_data.json").read_text())
    assert [key for key in prints if prints[key] != changed[key]] == ["data.user_tasks.my_reviews.train"]


# --- a bad file of the user's own data stops the pipeline at this stage --------------------------------------------

def _contents(folder: Path) -> dict[str, bytes]:
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_file_stops_user_files_with_prepares_message_and_keeps_its_fingerprints(case, tmp_path):
    """Every kind of bad file gets prepare's own one-line message (tests/test_user_tasks.py's BAD table), from the
    stage that runs before any stage that replaces outputs; the fingerprints it wrote before stay as they were."""
    from gpt1.params.schema import parse_params
    from gpt1.errors import UserError

    write_files(tmp_path)
    out = tmp_path / "prints"
    user_files.main(None, parse_params(declared(tmp_path)), out)
    before = _contents(out)
    change_files, change_params, expected = BAD[case]
    raw = declared(tmp_path)
    change_files(tmp_path)
    if change_params:
        change_params(tmp_path, raw)
    with pytest.raises(UserError) as error:
        user_files.main(None, parse_params(raw), out)
    assert "\n" not in str(error.value) and all(text in str(error.value) for text in expected), str(error.value)
    assert _contents(out) == before


@pytest.mark.slow
@pytest.mark.parametrize("tool", ["dvc", "snakemake"])
def test_a_bad_file_leaves_every_earlier_output_byte_for_byte(tool, tmp_path):
    """user_files and prepare as dvc.yaml declares them (their gpt1 modules aside), run by DVC or by Snakemake on the
    user's files of every family; then a bad file in the two ways a tool notices it (an edited row, a removed file;
    the stage's message for every kind of bad file is tested above): the run stops with the one-line message, and
    data/ (the fingerprints, data/tasks, data/corpus) holds the same bytes as after the good run."""
    outside, repo = tmp_path / "outside", tmp_path / "repo"
    write_files(outside)
    (repo / "data").mkdir(parents=True)
    shutil.copytree(outside / "raw", repo / "data/raw")
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    mini = {name: {**stages[name], "deps": [dep for dep in stages[name].get("deps", [])
                                            if not dep.startswith(("gpt1/", "code_fingerprints/"))]}
            for name in ("user_files", "prepare")}
    (repo / "dvc.yaml").write_text(yaml.safe_dump({"stages": mini}, sort_keys=False))
    shutil.copytree(ROOT / "workflow", repo / "workflow")
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    for command in (["git", "init", "-q"], [str(BIN / "dvc"), "init", "-q"]):
        subprocess.run(command, cwd=repo, check=True, env=env)
    run = [str(BIN / "dvc"), "repro"] if tool == "dvc" else [sys.executable, "-m", "snakemake", "--cores", "1"]

    def pipeline(raw: dict) -> subprocess.CompletedProcess:
        (repo / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
        return subprocess.run(run, cwd=repo, env=env, capture_output=True, text=True)

    good = pipeline(declared(outside))
    assert good.returncode == 0, good.stdout[-3000:] + good.stderr[-3000:]
    before = _contents(repo / "data")
    assert any(name.startswith("tasks/my_quiz/") for name in before) and "corpus/stats.json" in before
    for case in ("label not in the set", "missing file"):
        change_files, change_params, expected = BAD[case]
        raw = declared(outside)
        change_files(outside)
        if change_params:
            change_params(outside, raw)
        result = pipeline(raw)
        errors = [line for line in (result.stdout + result.stderr).splitlines() if "gpt1 user-files: error:" in line]
        assert result.returncode != 0 and len(errors) == 1, (case, result.stdout[-2000:] + result.stderr[-2000:])
        assert all(text in errors[0] for text in expected), (case, errors[0])
        assert _contents(repo / "data") == before, case
        write_files(outside)  # the good files again, for the next case
