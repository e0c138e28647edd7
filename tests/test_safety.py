"""Never lose a user's files or a run's work: folders a user names are replaced only when they are ours, a
diverging fine-tuning run publishes nothing, temporaries of killed writes go at the next write, and every
user mistake in the list below is one line and a non-zero exit, not a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from gpt1.files.atomic import OWNER_MARKER, atomic_directory, atomic_path, claim_folder
from gpt1.params.schema import parse_params
from gpt1.data.records import ClassificationExample
from gpt1.data.task_data import TaskData
from gpt1.errors import UserError
from gpt1.eval.baselines import tfidf_logreg
from gpt1.model import hf_export, weights
from gpt1.model.heads import TaskModel
from gpt1.model.lm import save_model
from gpt1.tokenizer.bpe import Gpt1Bpe
from gpt1.files.tokens_meta import load_tokens
from gpt1.train.loop import Diverged
from test_cli import gpt1
from test_finetune import SPECS, run
from test_finetune import one_thread, workspace  # noqa: F401 (fixtures used by name)
from test_model_use import tiny_language_model
from test_pretrain import tiny_raw_params

ROOT = Path(__file__).resolve().parents[1]


# --- folders and files a user names ------------------------------------------------------------------------

@pytest.fixture
def checkpoint(tmp_path) -> Path:
    save_model(tiny_language_model(), tmp_path / "model.safetensors")
    return tmp_path / "model.safetensors"


def export(tmp_path: Path, checkpoint: Path, out, *extra) -> subprocess.CompletedProcess:
    return gpt1("export-weights", "--model", checkpoint, "--format", "openai", "--out", out, *extra, cwd=tmp_path)


def test_export_into_a_folder_with_a_users_file_refuses_and_keeps_it(tmp_path, checkpoint):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("my notes")
    result = export(tmp_path, checkpoint, tmp_path / "mine")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "holds files gpt1 did not write (notes.txt)" in result.stderr and "--force" in result.stderr
    assert sorted(p.name for p in (tmp_path / "mine").iterdir()) == ["notes.txt"]
    assert (tmp_path / "mine" / "notes.txt").read_text() == "my notes"


@pytest.mark.parametrize("out", [".", "..", "~"])
def test_export_into_the_working_directory_a_parent_or_home_is_refused_even_with_force(tmp_path, checkpoint, out):
    (tmp_path / "keep.txt").write_text("x")
    for extra in ((), ("--force",)):
        result = export(tmp_path, checkpoint, os.path.expanduser(out), *extra)
        assert result.returncode == 2 and "holds the working directory or your home folder" in result.stderr
    assert (tmp_path / "keep.txt").read_text() == "x"


def test_an_earlier_export_is_replaced_whole_and_force_replaces_a_foreign_folder(tmp_path, checkpoint):
    assert export(tmp_path, checkpoint, tmp_path / "release").returncode == 0
    assert (tmp_path / "release" / OWNER_MARKER).is_file()
    (tmp_path / "release" / "params_12.npy").write_bytes(b"stale")  # from an export with more files
    assert export(tmp_path, checkpoint, tmp_path / "release").returncode == 0
    assert not (tmp_path / "release" / "params_12.npy").exists()
    assert weights.import_openai(tmp_path / "release", n_head=2).num_parameters() > 0

    (tmp_path / "theirs").mkdir()
    (tmp_path / "theirs" / "a.txt").write_text("a")
    assert export(tmp_path, checkpoint, tmp_path / "theirs", "--force").returncode == 0
    assert not (tmp_path / "theirs" / "a.txt").exists()


def test_import_weights_does_not_overwrite_a_file_that_is_not_a_checkpoint(tmp_path, checkpoint):
    weights.export_openai(tiny_language_model(), tmp_path / "release")
    (tmp_path / "thesis.tex").write_text("chapter 1")
    result = gpt1("import-weights", tmp_path / "release", "--n-head", "2", "--out", tmp_path / "thesis.tex",
                  cwd=tmp_path)
    assert result.returncode == 2 and "is not a gpt1 checkpoint" in result.stderr
    assert (tmp_path / "thesis.tex").read_text() == "chapter 1"
    again = gpt1("import-weights", tmp_path / "release", "--n-head", "2", "--out", checkpoint, cwd=tmp_path)
    assert again.returncode == 0, again.stderr  # a checkpoint of ours is replaced


def test_claim_folder_accepts_absent_and_empty_folders(tmp_path):
    assert claim_folder(tmp_path / "new") == tmp_path / "new"
    (tmp_path / "empty").mkdir()
    assert claim_folder(tmp_path / "empty") == tmp_path / "empty"
    (tmp_path / "file").write_text("x")
    with pytest.raises(UserError, match="exists and is not a folder"):
        claim_folder(tmp_path / "file", force=True)


# --- temporaries a kill leaves behind ----------------------------------------------------------------------

def test_the_next_write_of_a_target_removes_what_killed_writes_of_it_left_and_nothing_else(tmp_path):
    (tmp_path / ".tokens.k1ll3d.tmp").mkdir()  # a killed `gpt1 tokenize`
    (tmp_path / ".tokens.k1ll3d.tmp" / "train.bin").write_bytes(b"\0" * 100)
    (tmp_path / ".scores.csv.k1ll3d.tmp").write_text("half")  # a killed write of results/scores.csv
    (tmp_path / ".seed1.k1ll3d.tmp").mkdir()  # a killed fine-tuning seed
    (tmp_path / ".other.k1ll3d.tmp").write_text("another target's: not ours to touch here")
    (tmp_path / "tokens.notes.tmp").write_text("a user's file")
    with atomic_directory(tmp_path / "tokens") as staging:
        (staging / "meta.json").write_text("{}")
    with atomic_path(tmp_path / "scores.csv") as temporary:
        temporary.write_text("a,b\n")
    with atomic_directory(tmp_path / "seed1") as staging:
        (staging / "metrics.json").write_text("{}")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".other.k1ll3d.tmp", "scores.csv", "seed1", "tokens", "tokens.notes.tmp"]


# --- divergence in fine-tuning -------------------------------------------------------------------------------

def test_a_diverging_fine_tuning_run_stops_names_the_rate_and_writes_nothing(workspace, monkeypatch):  # noqa: F811
    original = TaskModel.loss

    def nan_loss(self, *args, **kwargs):
        loss, task_loss, lm_loss = original(self, *args, **kwargs)
        return loss * float("nan"), task_loss, lm_loss

    monkeypatch.setattr(TaskModel, "loss", nan_loss)
    with pytest.raises(Diverged, match=r"^finetune rt_polarity/no_pretrain/seed1: training diverged at update 1 "
                       r"\(loss nan.*Lower methods.no_pretrain.lr \(or finetune.grad_clip\)"):
        run(workspace, "rt_polarity", "no_pretrain", out="diverged")
    assert not (workspace / "out" / "diverged").exists()


def test_a_non_finite_prediction_is_never_written_as_bare_nan(workspace, monkeypatch):  # noqa: F811
    from gpt1.train import finetune_outputs

    monkeypatch.setattr(finetune_outputs, "predict", lambda model, examples, *args: [torch.tensor([float("nan"), 0.5])
                                                                               for _ in examples])
    with pytest.raises(UserError, match="not a finite number"):
        run(workspace, "rt_polarity", "full", out="nan-predictions")
    assert not (workspace / "out" / "nan-predictions").exists()


# --- one line for each user mistake -------------------------------------------------------------------------

def one_class_data() -> TaskData:
    rows = [ClassificationExample(text=f"review {i}", label=1) for i in range(6)]
    return TaskData(spec=SPECS["rt_polarity"], splits={"train": rows, "dev": rows, "test": rows},
                    full_sizes={"train": 6, "dev": 6, "test": 6})


def empty_validation_split(tmp_path: Path):
    (tmp_path / "meta.json").write_text(json.dumps({"dtype": "uint16", "vocab_size": 40}))
    (tmp_path / "val.bin").write_bytes(b"")
    return load_tokens(tmp_path, "val")


def unreadable_bpe(tmp_path: Path, encoder: bytes, merges: bytes):
    (tmp_path / "encoder_bpe_1.json").write_bytes(encoder)
    (tmp_path / "vocab_1.bpe").write_bytes(merges)
    return Gpt1Bpe.load(tmp_path)


def hf_folder_with(tmp_path: Path, setting: dict):
    hf_export.export_hf(tiny_language_model(), tmp_path / "hf")
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    (tmp_path / "hf" / "config.json").write_text(json.dumps({**config, **setting}))
    return weights.import_hf(tmp_path / "hf")


def string_npy(tmp_path: Path):
    (tmp_path / "params_shapes.json").write_text("[[2, 2], [3, 2]]")
    np.save(tmp_path / "params_0.npy", np.array(["a"] * 10))
    return weights.import_openai(tmp_path)


def params_with(**sections):
    raw = tiny_raw_params()
    for section, values in sections.items():
        raw[section] = {**raw[section], **values} if isinstance(raw[section], dict) else values
    return parse_params(raw, "params.yaml")


MISTAKES = {  # what a user does -> (how it is tried, what the one line says)
    "baselines on a one-class training sample": (lambda tmp: tfidf_logreg(one_class_data(), 0),
                                                 "every example of the training sample has label 1"),
    "an empty validation split": (empty_validation_split, "val.bin holds no tokens"),
    "a BPE encoder that is not JSON": (lambda tmp: unreadable_bpe(tmp, b"{oops", b"#version\na b\n"),
                                       "encoder_bpe_1.json: not valid JSON"),
    "a BPE encoder that is not UTF-8": (lambda tmp: unreadable_bpe(tmp, b'{"caf\xe9": 0}', b"#version\n"),
                                        "encoder_bpe_1.json: not UTF-8 text"),
    "a malformed merges line": (lambda tmp: unreadable_bpe(tmp, b'{"a": 0, "b": 1, "ab": 2}', b"#v\nab\n"),
                                "vocab_1.bpe:2: expected one merge"),
    "a non-integer in an HF config.json": (lambda tmp: hf_folder_with(tmp, {"n_layer": "twelve"}),
                                           "n_layer must be a positive integer, found 'twelve'"),
    "a string-typed .npy": (string_npy, "params_0.npy holds <U1 values, not numbers"),
    "a seed of 2**64": (lambda tmp: params_with(seed=2**64), "bad value for 'seed'"),
    "an infinite weight decay": (lambda tmp: params_with(finetune={"weight_decay": float("inf")}),
                                 "bad value for 'finetune.weight_decay'"),
    "an infinite gradient clip": (lambda tmp: params_with(pretrain={"grad_clip": float("inf")}),
                                  "bad value for 'pretrain.grad_clip'"),
    "an infinite λ": (lambda tmp: params_with(finetune={"lm_coef": float("inf")}), "bad value for 'finetune.lm_coef'"),
    "a local folder inside data/raw": (lambda tmp: params_with(data={"local_paths": {"books": "data/raw/books"}}),
                                       "'books' (data/raw/books) is inside data/, where the pipeline writes"),
    "a file:// mirror": (lambda tmp: params_with(data={"mirrors": {"vader": {"url": "file:///dev/zero",
                                                                             "sha256": "0" * 64}}}),
                         "a mirror is an http:// or https:// URL"),
}


@pytest.mark.parametrize("mistake", MISTAKES)
def test_each_user_mistake_is_one_clear_error(tmp_path, mistake):
    attempt, message = MISTAKES[mistake]
    with pytest.raises(UserError, match=message.replace("(", r"\(").replace(")", r"\)").replace("*", r"\*")) as raised:
        attempt(tmp_path)
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize("command", [("generate", "--prompt", "-"), ("predict", "--run", "some/run")])
def test_stdin_that_is_not_utf8_is_one_line(tmp_path, command):
    result = subprocess.run([sys.executable, "-m", "gpt1.cli", *command], cwd=tmp_path, input=b"caf\xe9\n",
                            capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    stderr = result.stderr.decode()
    assert result.returncode == 2 and stderr.strip().splitlines() == [
        f"gpt1 {command[0]}: error: stdin: not UTF-8 text at line 1, byte 3 of the file (invalid continuation byte); "
        "save it as UTF-8"]


@pytest.mark.parametrize("line, message", [
    ('{"text": ["a film", "another"]}', "text must be a JSON string of text"),
    ('{"text": "a film", "label": 1e309}', "label inf is not a finite number; fix the input"),
])
def test_predict_input_of_the_wrong_type_is_one_line(line, message):
    from gpt1.commands.predict import parse_example

    with pytest.raises(UserError, match=message):
        parse_example(line, SPECS["rt_polarity"], "stdin:1")


def test_the_bpe_files_are_utf8_whatever_the_locale(tmp_path):
    """Under an ASCII locale with UTF-8 mode off, `open()` without an encoding cannot write 'café'."""
    script = ("import sys; from pathlib import Path; from gpt1.tokenizer.bpe import Gpt1Bpe\n"
              "Gpt1Bpe.from_merges(['c', 'a', 'f', '\\u00e9</w>'], [('c', 'a')]).save(Path(sys.argv[1]))")
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0",
                   "PYTHONCOERCECLOCALE": "0"}
    result = subprocess.run([sys.executable, "-c", script, str(tmp_path / "bpe")], capture_output=True, text=True,
                            env=environment)
    assert result.returncode == 0, result.stderr
    assert "é</w>" in (tmp_path / "bpe" / "encoder_bpe_1.json").read_text(encoding="utf-8")
    assert Gpt1Bpe.load(tmp_path / "bpe").encoder["é</w>"] == 3


def test_download_removes_only_the_source_folders_it_wrote(tmp_path, monkeypatch):
    from gpt1.data import registry
    from gpt1.stages import download

    raw = tmp_path / "raw"
    (raw / "shakespeare").mkdir(parents=True)  # a source of an earlier selection: ours, removed
    (raw / "shakespeare" / "hamlet.txt").write_text("x")
    (raw / "my_books").mkdir()  # not a source name: a person's, kept
    (raw / "my_books" / "book.txt").write_text("mine")
    (raw / "notes.md").write_text("mine too")
    monkeypatch.setattr(registry, "sources_needed", lambda corpus, tasks: [])
    download.run(parse_params(tiny_raw_params()), raw, cache_dir=tmp_path / "cache")
    assert sorted(p.name for p in raw.iterdir()) == ["SOURCES.json", "my_books", "notes.md"]
    assert (raw / "my_books" / "book.txt").read_text() == "mine"
