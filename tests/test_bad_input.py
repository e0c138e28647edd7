"""Bad input gets one line naming the file (and row) and the fix: stages run out of order, files that are not
UTF-8, task rows with missing, mistyped or empty fields."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpt1.data import packaged, upstream_rows
from gpt1.data.records import TaskSpec, check_examples, read_examples
from gpt1.errors import UserError

ROOT = Path(__file__).resolve().parents[1]
NOT_UTF8 = b"caf\xe9 au lait"  # latin-1 bytes


def gpt1(*args, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpt1.cli", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True)


@pytest.fixture
def project(tmp_path) -> Path:
    shutil.copy(ROOT / "params.yaml", tmp_path / "params.yaml")
    return tmp_path


@pytest.mark.parametrize("stage, missing, earlier", [
    ("prepare", "data/raw/", "prepare"),  # before `gpt1 download`
    ("bpe", "data/corpus/train.jsonl", "bpe"),  # before `gpt1 prepare`
])
def test_a_stage_run_before_its_inputs_exist_says_which_file_and_what_to_run(project, stage, missing, earlier):
    result = gpt1(stage, cwd=project)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"gpt1 {stage}: error: {missing}"), result.stderr
    assert "not found" in lines[0] and f"`dvc repro {earlier}`" in lines[0]
    assert "Traceback" not in result.stderr


def test_params_that_are_not_utf8_stop_with_one_line(project):
    (project / "params.yaml").write_bytes(b"seed: 1\nnote: " + NOT_UTF8 + b"\n")
    result = gpt1("prepare", cwd=project)
    assert result.returncode == 2
    assert result.stderr.strip() == ("gpt1 prepare: error: params.yaml: not UTF-8 text at line 2, byte 17 of the "
                                     "file (invalid continuation byte); save it as UTF-8")


def test_import_weights_needs_no_params_file(tmp_path):
    result = gpt1("import-weights", tmp_path / "nothing-here", "--out", tmp_path / "x.safetensors", cwd=tmp_path)
    assert result.returncode == 2 and "params.yaml" not in result.stderr
    assert "nothing-here" in result.stderr


SENTIMENT = TaskSpec("sentiment", "classification", ("negative", "positive"), ("accuracy",), "test")
CHOICE = TaskSpec("choice", "multiple_choice", ("A", "B"), ("accuracy",), "test")


def write_rows(path: Path, rows: list) -> Path:
    path.write_text("".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows))
    return path


@pytest.mark.parametrize("row, message", [
    ({"text": "fine"}, "not a classification record"),  # label missing
    ({"text": "fine", "label": 1, "extra": 2}, "not a classification record"),
    ("[1, 2]", "a JSON object per line expected"),
    ("{not json", "not a classification record"),
])
def test_task_rows_that_are_not_records_name_the_row(tmp_path, row, message):
    path = write_rows(tmp_path / "train.jsonl", [{"text": "good", "label": 1}, row])
    with pytest.raises(UserError, match=f"{path}:2: .*{message}"):
        read_examples(path, "classification")


@pytest.mark.parametrize("spec, row, message", [
    (SENTIMENT, {"text": 42, "label": 1}, "text must be non-empty text, found 42"),
    (SENTIMENT, {"text": "   ", "label": 1}, "text must be non-empty text"),
    (CHOICE, {"context": "", "choices": ["a", "b"], "label": 0}, "context must be non-empty text"),
    (CHOICE, {"context": "Pick.", "choices": ["a", ""], "label": 0}, "choices must be non-empty text"),
    (CHOICE, {"context": "Pick.", "choices": ["a", None], "label": 0}, "choices must be non-empty text, found None"),
])
def test_task_rows_with_mistyped_or_empty_fields_are_refused_before_training(tmp_path, spec, row, message):
    path = write_rows(tmp_path / "train.jsonl", [row])
    with pytest.raises(UserError, match=f"{path}:1: {message}"):
        check_examples(read_examples(path, spec.family), spec, str(path))


def test_choices_must_be_a_list_not_a_string(tmp_path):
    path = write_rows(tmp_path / "train.jsonl", [{"context": "Pick.", "choices": "ab", "label": 0}])
    with pytest.raises(UserError, match="train.jsonl:1: not a multiple_choice record \\(choices must be a list\\)"):
        read_examples(path, "multiple_choice")


def test_task_rows_that_are_not_utf8(tmp_path):
    path = tmp_path / "train.jsonl"
    path.write_bytes(b'{"text": "good", "label": 1}\n{"text": "' + NOT_UTF8 + b'", "label": 0}\n')
    with pytest.raises(UserError, match=f"{path}: not UTF-8 text at line 2, byte 42 of the file \\(invalid "
                                        "continuation byte\\)"):
        read_examples(path, "classification")


@pytest.mark.parametrize("read", ["lines", "whole"])
def test_a_bad_byte_far_into_a_file_is_named_by_its_line_and_offset_in_the_file(tmp_path, read):
    """Past the decoder's first chunk (8 KB), its own offset counts from the chunk's start, not the file's."""
    from gpt1.files.text_files import open_text, read_text

    path = tmp_path / "big.tsv"
    good = "".join(f"row {number}\tsome text of a row\n" for number in range(5000)).encode()
    assert len(good) > 64 * 1024
    path.write_bytes(good + b"row 5000\t" + NOT_UTF8 + b"\nrow 5001\tfine\n")
    offset = len(good) + len(b"row 5000\tcaf")
    expected = (f"{path}: not UTF-8 text at line 5001, byte {offset} of the file (invalid continuation byte); save "
                "it as UTF-8")
    with pytest.raises(UserError) as error:
        if read == "lines":
            with open_text(path, encoding="utf-8-sig") as handle:
                list(handle)
        else:
            read_text(path)
    assert str(error.value) == expected


def test_upstream_files_that_are_not_utf8(tmp_path):
    snippets = tmp_path / "vader" / "hutto_ICWSM_2014" / "movieReviewSnippets_GroundTruth.txt"
    snippets.parent.mkdir(parents=True)
    snippets.write_bytes(b"1\t1.5\t" + NOT_UTF8 + b"\n")
    with pytest.raises(UserError, match="movieReviewSnippets_GroundTruth.txt: not UTF-8 text"):
        packaged.load_rt_polarity(tmp_path)
    tsv = tmp_path / "train.tsv"
    tsv.write_bytes(b"sentence\tlabel\ngood\t1\n" + NOT_UTF8 + b"\t0\n")
    with pytest.raises(UserError, match="train.tsv: not UTF-8 text"):
        list(upstream_rows.columns(tsv, ("sentence", "label")))


# --- checkpoints and released weights ----------------------------------------------------------------

def _tiny_checkpoint(path: Path) -> Path:
    from gpt1.model.lm import build_model, save_model

    save_model(build_model("transformer", dict(vocab_size=20, n_positions=8, n_layer=1, n_head=2, d_model=8,
                                               d_ff=16)), path)
    return path


@pytest.mark.parametrize("metadata, message", [
    ("not json", "has unreadable gpt1 metadata \\(JSONDecodeError"),
    ('{"kind": "transformer"}', "has unreadable gpt1 metadata \\(KeyError"),
    ('{"kind": "transformer", "config": [1, 2]}', ": unknown transformer model setting\\(s\\) \\[1, 2\\]"),
    ('{"kind": "gru", "config": {}}', ": unknown model kind 'gru'"),
    ('{"kind": "transformer", "config": {"vocab_size": 20, "n_positions": 8, "n_layer": 1, "n_head": 2, '
     '"d_model": 16, "d_ff": 16}}', "does not match its own config: size mismatch for"),
])
def test_checkpoints_with_bad_metadata_or_mismatched_tensors(tmp_path, metadata, message):
    from safetensors.torch import load_file, save_file

    from gpt1.model.lm import load_model

    path = _tiny_checkpoint(tmp_path / "model.safetensors")
    save_file(load_file(str(path)), str(path), metadata={"gpt1": metadata})
    with pytest.raises(UserError, match=f"{path}{'' if message.startswith(':') else ' '}{message}"):
        load_model(path)


def test_truncated_hf_safetensors_is_one_line(tmp_path):
    from gpt1.model.weights import import_weights

    folder = tmp_path / "released"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "openai-gpt", "n_embd": 8, "n_layer": 1,
                                                    "n_head": 2, "n_positions": 8, "vocab_size": 20}))
    whole = _tiny_checkpoint(tmp_path / "whole.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(whole[: len(whole) // 2])
    with pytest.raises(UserError, match="model.safetensors is not a readable safetensors file"):
        import_weights(folder)
    (folder / "config.json").write_text("{model_type: openai-gpt")
    with pytest.raises(UserError, match="config.json: not valid JSON \\(line 1"):
        import_weights(folder)


@pytest.mark.parametrize("shapes, message", [
    ("[[512, 768], ", "not valid JSON"),
    ('{"shapes": []}', "expected a list of array shapes, found dict"),
    ("[[512, 768], [40478, \"768\"]]", "every entry must be a shape"),
    ("[[512, 768], [40478, -1]]", "every entry must be a shape"),
])
def test_malformed_params_shapes_json_is_one_line(tmp_path, shapes, message):
    from gpt1.model.weights import import_weights

    (tmp_path / "params_shapes.json").write_text(shapes)
    with pytest.raises(UserError, match=f"params_shapes.json: {message}"):
        import_weights(tmp_path)
