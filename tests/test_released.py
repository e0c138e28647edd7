"""`gpt1 fetch-released` on tiny weights in both exact released layouts, from a folder and from a hub served over
local HTTP (HF_ENDPOINT), and what a run with nothing pretrained here writes where a model would be."""

import hashlib
import http.server
import json
import threading

import pytest
import torch

from gpt1.commands import fetch_released
from gpt1.errors import UserError
from gpt1.model.lm import GPT1, TransformerConfig, load_model
from gpt1.model.weights import export_openai
from gpt1.params.schema import parse_params
from gpt1.tokenizer.bpe import Gpt1Bpe
from test_pretrain import tiny_raw_params, write_tokens

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def tiny_bpe() -> Gpt1Bpe:
    base = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    base += [c + "</w>" for c in base]
    return Gpt1Bpe.from_merges(base, [("t", "h"), ("th", "e</w>"), ("a", "n"), ("an", "d</w>")])


def tiny_model(vocab_size: int) -> GPT1:
    torch.manual_seed(0)
    return GPT1(TransformerConfig(vocab_size=vocab_size, n_positions=16, n_layer=2, n_head=2, d_model=16, d_ff=64))


def openai_folder(folder, bpe: Gpt1Bpe) -> GPT1:
    """OpenAI's model/ folder: params_shapes.json + params_0..9.npy + encoder_bpe_<n>.json + vocab_<n>.bpe."""
    model = tiny_model(len(bpe.encoder))
    export_openai(model, folder)
    (folder / ".gpt1-output").unlink()  # the release has no marker of ours
    bpe.write_vocabulary(folder / f"encoder_bpe_{len(bpe.merges)}.json", folder / f"vocab_{len(bpe.merges)}.bpe")
    return model


def transformers_folder(folder, bpe: Gpt1Bpe):
    """transformers' folder as save_pretrained writes it, with the tokenizer's vocab.json + merges.txt."""
    transformers = pytest.importorskip("transformers")
    config = transformers.OpenAIGPTConfig(vocab_size=len(bpe.encoder), n_positions=16, n_embd=16, n_layer=2, n_head=2)
    torch.manual_seed(0)
    reference = transformers.OpenAIGPTLMHeadModel(config).eval()
    reference.save_pretrained(folder)
    bpe.write_vocabulary(folder / "vocab.json", folder / "merges.txt")
    return reference


def assert_release(out, bpe: Gpt1Bpe) -> GPT1:
    assert Gpt1Bpe.load(out).encoder == bpe.encoder and Gpt1Bpe.load(out).merges == bpe.merges
    manifest = json.loads((out / fetch_released.MANIFEST).read_text())
    for name, digest in manifest["written"].items():
        assert hashlib.sha256((out / name).read_bytes()).hexdigest() == digest
    return load_model(out / fetch_released.WEIGHTS_FILE)


def test_openai_folder_becomes_the_profiles_folder(tmp_path):
    bpe = tiny_bpe()
    model = openai_folder(tmp_path / "model", bpe)
    out = fetch_released.main(str(tmp_path / "model"), tmp_path / "released", n_head=2)
    ours = assert_release(out, bpe)
    assert sorted(p.name for p in out.iterdir()) == [".gpt1-output", "MANIFEST.json", "encoder_bpe_4.json",
                                                     "vocab_4.bpe", "weights.safetensors"]
    assert all(torch.equal(a, b) for a, b in zip(ours.state_dict().values(), model.state_dict().values()))
    manifest = json.loads((out / "MANIFEST.json").read_text())
    assert set(manifest["read"]) == {"params_shapes.json", *(f"params_{i}.npy" for i in range(10)),
                                     "encoder_bpe_4.json", "vocab_4.bpe"}
    fetch_released.main(str(tmp_path / "model"), out, n_head=2)  # its own folder: replaced


def test_transformers_folder_gives_the_same_logits(tmp_path):
    bpe = tiny_bpe()
    reference = transformers_folder(tmp_path / "hf", bpe)
    ours = assert_release(fetch_released.main(str(tmp_path / "hf"), tmp_path / "released"), bpe)
    ids = torch.randint(0, len(bpe.encoder), (2, 16))
    with torch.no_grad():
        assert torch.allclose(ours(ids), reference(ids).logits, atol=1e-5)


def test_bad_sources_and_foreign_folders_stop_with_one_line(tmp_path):
    (tmp_path / "theirs").mkdir()
    (tmp_path / "theirs" / "notes.txt").write_text("mine")
    openai_folder(tmp_path / "model", tiny_bpe())
    with pytest.raises(UserError, match="holds files gpt1 did not write"):
        fetch_released.main(str(tmp_path / "model"), tmp_path / "theirs")
    assert (tmp_path / "theirs" / "notes.txt").read_text() == "mine"
    with pytest.raises(UserError, match="neither a folder nor a Hugging Face repository id"):
        fetch_released.main(str(tmp_path / "missing" / "x" / "y"), tmp_path / "out")
    (tmp_path / "model" / "vocab_4.bpe").unlink()
    with pytest.raises(UserError, match="no released BPE"):
        fetch_released.main(str(tmp_path / "model"), tmp_path / "out", n_head=2)
    assert not (tmp_path / "out").exists()


class Hub(http.server.BaseHTTPRequestHandler):
    """What the hub answers at /<repo>/resolve/<revision>/<file>: the file, the commit and its ETag."""
    files: dict[str, bytes] = {}

    def _answer(self, body: bool) -> None:
        parts = self.path.split("?")[0].strip("/").split("/")
        name = parts[-1] if len(parts) == 5 and parts[2] == "resolve" and parts[3] in ("main", COMMIT) else None
        if name not in self.files:
            self.send_response(404)
            self.send_header("X-Error-Code", "EntryNotFound")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        data = self.files[name]
        self.send_response(200)
        self.send_header("X-Repo-Commit", COMMIT)
        self.send_header("ETag", f'"{hashlib.sha256(data).hexdigest()}"')
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if body:
            self.wfile.write(data)

    def do_HEAD(self):  # noqa: N802
        self._answer(body=False)

    def do_GET(self):  # noqa: N802
        self._answer(body=True)

    def log_message(self, *args):
        pass


def test_the_hub_path_downloads_checks_and_records_the_commit(tmp_path, monkeypatch):
    bpe = tiny_bpe()
    transformers_folder(tmp_path / "hf", bpe)
    Hub.files = {p.name: p.read_bytes() for p in (tmp_path / "hf").iterdir() if p.name != "generation_config.json"}
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{httpd.server_address[1]}")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))
    try:
        out = fetch_released.main(fetch_released.HUB_REPOSITORY, tmp_path / "released")
        assert_release(out, bpe)
        manifest = json.loads((out / "MANIFEST.json").read_text())
        assert manifest["commit"] == COMMIT and manifest["source"] == "hf://openai-community/openai-gpt"
        assert manifest["read"]["model.safetensors"] == hashlib.sha256(Hub.files["model.safetensors"]).hexdigest()
        monkeypatch.setitem(fetch_released.PINNED_SHA256, COMMIT, {"model.safetensors": "0" * 64})
        with pytest.raises(UserError, match="is not the pinned"):
            fetch_released.main(fetch_released.HUB_REPOSITORY, out)
        assert_release(out, bpe)  # the earlier fetch stands
        with pytest.raises(UserError, match="could not fetch"):
            fetch_released.main("someone/absent", tmp_path / "other", revision="v9")
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_the_lstm_without_released_weights_is_dropped_or_refused(tmp_path):
    raw = tiny_raw_params(max_steps=0, init_from="released")
    with pytest.raises(UserError, match="lists lstm.*drop lstm"):
        parse_params(raw)
    raw["finetune"]["methods"] = ["full", "no_pretrain"]
    params = parse_params(raw)
    from gpt1.stages.pretrain import run

    result = run(params, "lstm", write_tokens(tmp_path / "tokens"), tmp_path / "out", tmp_path / "metrics")
    assert "no released weights" in result["not applicable"]
    assert list((tmp_path / "out" / "checkpoints").iterdir()) == []
    with pytest.raises(UserError, match="holds no model: not applicable: the lstm has no released weights"):
        load_model(tmp_path / "out" / "model.safetensors")
    assert "not applicable" in json.loads((tmp_path / "metrics" / "headline.json").read_text())["lstm"]


def test_the_transfer_curve_says_it_does_not_apply_unless_asked_for(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from gpt1.stages import transfer_curve

    monkeypatch.chdir(tmp_path)
    raw = tiny_raw_params(max_steps=0, init_from="released")
    raw["finetune"]["methods"] = ["full", "no_pretrain"]
    task = raw["analysis"]["transfer_curve_tasks"][0]
    raw["analysis"]["transfer_curve_steps"] = []
    transfer_curve.main(SimpleNamespace(task=task, step=None, seed=None), parse_params(raw))
    written = (tmp_path / "results" / "transfer_curve" / task / "not_applicable.txt").read_text()
    assert written.startswith("not applicable: the transfer curve fine-tunes from checkpoints")
    raw["analysis"]["transfer_curve_steps"] = [2]  # asked for explicitly: the stage says why it cannot
    with pytest.raises(UserError, match="pretrain.max_steps is 0"):
        transfer_curve.main(SimpleNamespace(task=task, step=None, seed=None), parse_params(raw))


def test_the_released_route_without_story_cloze_names_the_task_and_the_line_that_runs_the_rest(tmp_path):
    """The paper profile's tasks include Story Cloze, whose files are registration-only: before anything is
    fetched, the download stage names it and gives the line that leaves it out; that line's task list loads."""
    from gpt1.data import registry
    from gpt1.params.files import compose_raw
    from gpt1.params.schema import load_params
    from gpt1.stages import download
    from tiny import ROOT

    profiles = [ROOT / "profiles/paper.yaml", ROOT / "profiles/released.yaml"]
    params = load_params(ROOT / "params.yaml", profiles)
    wanted = registry.sources_needed(params.data.corpus, params.data.scored_tasks)
    with pytest.raises(UserError) as error:
        download.check_local_folders(params, wanted)
    message = str(error.value)
    assert message.startswith("task story_cloze reads 'story_cloze', which is not downloaded but a folder of your "
                              "own: set data.local_paths.story_cloze to it (got None); or run without it: dvc exp "
                              "run -S 'data.tasks=[")
    kept = message.split("data.tasks=[", 1)[1].split("]", 1)[0].split(",")
    assert "story_cloze" not in kept and len(kept) == len(params.data.tasks) - 1
    raw, _ = compose_raw(ROOT / "params.yaml", profiles)
    raw["data"]["tasks"] = kept
    assert parse_params(raw).data.tasks == kept  # the line's selection is a valid run
    download.check_local_folders(parse_params(raw), registry.sources_needed(raw["data"]["corpus"], kept))
