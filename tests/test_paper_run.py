"""docs/paper-run.md's commands, each run on a CPU in a fresh copy of the project: `gpt1 fetch-released` against a
local stand-in for the Hugging Face hub (a tiny release), `gpt1 ... plan` as it is, and every `snakemake` command as
a dry run (`-n`: the DAG it would run, resolved with the page's profiles). A command the page adds that this test
does not know how to run fails it."""

from __future__ import annotations

import http.server
import shlex
import threading

import pytest
import yaml

from doc_commands import page_commands
from test_pipeline import BIN, ROOT, _fresh_copy, _run
from test_released import Hub, tiny_bpe, transformers_folder

pytestmark = pytest.mark.slow
PAGE = ROOT / "docs" / "paper-run.md"


@pytest.fixture
def hub(tmp_path, monkeypatch):
    transformers_folder(tmp_path / "hf", tiny_bpe())
    Hub.files = {p.name: p.read_bytes() for p in (tmp_path / "hf").iterdir() if p.name != "generation_config.json"}
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield {"HF_ENDPOINT": f"http://127.0.0.1:{httpd.server_address[1]}", "HF_HOME": str(tmp_path / "hf_home")}
    httpd.shutdown()
    httpd.server_close()


def test_every_command_of_the_runbook_runs(tmp_path, hub):
    project = _fresh_copy(tmp_path / "project")
    books, cloze = tmp_path / "bookcorpus", tmp_path / "story_cloze"  # the paths a user brings, outside the project
    books.mkdir(), cloze.mkdir()
    (project / "my-paths.yaml").write_text(yaml.safe_dump(
        {"data": {"local_paths": {"books": str(books), "story_cloze": str(cloze)}}}))
    seen = []
    for shown in page_commands(PAGE):  # split as a shell splits them (tests/doc_commands.py)
        command = list(shown.words)
        if command[:2] == ["gpt1", "fetch-released"]:
            _run([str(BIN / "gpt1"), *command[1:], "--n-head", "2"], project, **hub)
            assert (project / "released" / "weights.safetensors").is_file()
        elif command[0] == "gpt1" and "plan" in command:
            printed = _run([str(BIN / "gpt1"), *command[1:]], project)
            assert "GPU-hours" in printed
        elif command[0] == "snakemake":
            printed = _run([str(BIN / "snakemake"), "-n", *command[1:]], project)
            targets = [word for word in command[1:command.index("--cores")] if "/" in word] if "--cores" in command else []
            if targets:  # pretraining alone
                assert "pretrain" in printed and "finetune" not in printed, printed[-2000:]
            else:  # the whole DAG, to the paper's tables
                assert "finetune" in printed and "paper_tables" in printed, printed[-2000:]
        else:
            pytest.fail(f"{shown.where} shows `{shlex.join(command)}`, which this test does not run")
        seen.append(command[0])
    assert seen.count("snakemake") == 4 and "gpt1" in seen
