"""`gpt1 plan`: the work and cost figures against arithmetic written out here, for the tiny and the paper profile."""

from __future__ import annotations

import itertools
import json
import math
import shlex

import pytest
import yaml

from gpt1.cli import main as cli_main
from gpt1.commands import plan_report
from gpt1.commands.plan import MEASURED, plan
from gpt1.commands.plan_corpus import BYTES_PER_TOKEN
from gpt1.params.schema import load_params
from tiny import ROOT

H200_FLOPS = 514_487.2112496955 * 755_831_808.0  # tokens/s x FLOPs a token of the measured step
HOUR = 3600


@pytest.fixture
def no_data(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no data/: every task is estimated, the vocabulary assumed
    return tmp_path


def profile(name: str):
    return load_params(ROOT / "params.yaml", [ROOT / "profiles" / f"{name}.yaml"])


def row(rows: list[dict], **keys) -> dict:
    [found] = [entry for entry in rows if all(entry[key] == value for key, value in keys.items())]
    return found


def test_the_measured_rate_is_the_h200_benchmark_of_the_paper_profiles_settings():
    results = json.loads((ROOT / "docs/results/gpu/2026-11-26/benchmark-candidates.json").read_text())
    measured = results["compiled, dense LM loss, non-deterministic kernels, batch 64"]
    assert (measured["device_name"], measured["batch"], measured["lm_loss"], measured["deterministic"]) == (
        MEASURED.device, 64, "dense", False)
    assert measured["gpt1"]["tokens_per_second"] == MEASURED.tokens_per_second
    assert measured["flops_per_token"] == MEASURED.flops_per_token
    assert json.loads((ROOT / "docs/results/gpu/2026-11-26/gpu-check.json").read_text())["started"].startswith(MEASURED.date)


def tiny_with_four_tasks(folder):
    """The tiny profile with the default's four tasks (one per family) and analyses."""
    (folder / "four_tasks.yaml").write_text(yaml.safe_dump({
        "data": {"tasks": ["rt_polarity", "snli_100k", "sts_b", "social_iqa"]},
        "analysis": {"layer_transfer_tasks": ["snli_100k", "social_iqa"],
                     "transfer_curve_tasks": ["rt_polarity", "snli_100k"]}}))
    return load_params(ROOT / "params.yaml", [ROOT / "profiles" / "tiny.yaml", folder / "four_tasks.yaml"])


def test_tiny_profile(no_data):
    figures = plan(tiny_with_four_tasks(no_data))
    assert figures["vocab_size"] == 300 + 478 + 3  # bpe.merges + GPT-1's base symbols + _start_, _delimiter_, _classify_
    # Transformer, 1 layer of 32 (2 heads), d_ff 64, 32 positions: embeddings 781 x 32 + 32 x 32; a block's
    # c_attn 32 x 96 + 96, c_proj 32 x 32 + 32, two LayerNorms 2 x 64, MLP 32 x 64 + 64 and 64 x 32 + 32.
    transformer = 781 * 32 + 32 * 32 + (32 * 96 + 96) + (32 * 32 + 32) + 2 * 64 + (32 * 64 + 64) + (64 * 32 + 32)
    assert transformer == 34_560
    # LSTM 32 -> 48: embedding 781 x 32, input and recurrent weights 4 x 48 x (32 + 48), two biases 2 x 4 x 48,
    # projection 48 x 32 + 32.
    lstm = 781 * 32 + 4 * 48 * (32 + 48) + 2 * 4 * 48 + (48 * 32 + 32)
    assert lstm == 42_304
    pretraining = {entry["model"]: entry for entry in figures["pretraining"]}
    per_token = 6 * 34_560 + 12 * 1 * 32 * 32  # 6 N + 12 L d T
    assert pretraining["Transformer"]["parameters"] == 34_560 and pretraining["LSTM"]["parameters"] == 42_304
    for model, flops_a_token in (("Transformer", per_token), ("LSTM", 6 * 42_304)):
        assert pretraining[model]["updates"] == 6 and pretraining[model]["tokens"] == 6 * 256
        assert pretraining[model]["flops"] == 1_536 * flops_a_token
        assert pretraining[model]["gpu_hours"] == pytest.approx(1_536 * flops_a_token / H200_FLOPS / HOUR)
    # Fine-tuning: 16 examples of each task, 1 epoch of batches of 8, seed 1; sequences cut to 32 tokens.
    finetuning = figures["finetuning"]
    sts_b = row(finetuning, method="full", task="sts_b")
    assert (sts_b["examples"], sts_b["updates_per_run"], sts_b["runs"], sts_b["source"]) == (16, 2, 1, "estimate")
    assert sts_b["tokens"] == 16 * 2 * (14 + 14 + 3)  # both orders of [s] a $ b [e], 14 tokens assumed for each text
    assert sts_b["flops"] == 6 * 34_560 * sts_b["tokens"]
    # social_iqa: 3 candidates of [s] context $ answer [e]; the 27-token context keeps its last 29 - 5 = 24.
    assert row(finetuning, method="lstm", task="social_iqa")["flops"] == 6 * 42_304 * 16 * 3 * (24 + 5 + 3)
    assert row(finetuning, method="layer_transfer", task="snli_100k")["tokens"] == 16 * (18 + 11 + 3)
    assert len(finetuning) == 4 * 4 + 2 + 2  # methods x tasks, then the analyses' tasks


def test_tiny_profile_reads_prepared_task_tokens(no_data):
    """Where encode_task has run, the examples and their lengths are the prepared training split's."""
    folder = no_data / "data/task_tokens/rt_polarity"
    folder.mkdir(parents=True)
    (folder / "tokens.json").write_text(json.dumps({"spec": {"family": "classification"}}))
    lengths = [5, 40, 10]  # 40 is cut to 30 text tokens to fit [s] text [e] in 32
    (folder / "train.jsonl").write_text("".join(json.dumps({"texts": [[7] * n], "label": 0}) + "\n" for n in lengths))
    full = row(plan(tiny_with_four_tasks(no_data))["finetuning"], method="full", task="rt_polarity")
    assert (full["examples"], full["updates_per_run"], full["source"]) == (3, 1, "prepared")
    assert full["tokens"] == (5 + 2) + (30 + 2) + (10 + 2)


def test_paper_profile(no_data):
    figures = plan(profile("paper"))
    parameters = 116_534_784 + 3 * 768  # transformers' openai-gpt with the 3 special tokens' rows
    transformer = row(figures["pretraining"], model="Transformer")
    assert transformer["parameters"] == parameters
    # 100 epochs of books1 before it is downloaded: its 6.30 GiB over the bytes a 40,000-merge BPE token covers
    corpus = round(round(6.30 * 2**30) / BYTES_PER_TOKEN[40_000])
    assert figures["corpus"] == {"tokens": corpus, "exact": False, "source": figures["corpus"]["source"],
                                 "bytes": 6_764_573_491}  # books1's training text, which the data stages read
    assert figures["corpus"]["source"].startswith("estimate: books1 6,764.6 MB at 4.73 bytes a token")
    updates = math.ceil(100 * corpus / 32_768)
    assert transformer["updates"] == updates and transformer["tokens"] == updates * 32_768
    per_token = 6 * parameters + 12 * 12 * 768 * 512
    assert transformer["flops"] == pytest.approx(updates * 32_768 * per_token)
    assert transformer["gpu_hours"] == pytest.approx(updates * 32_768 * per_token / H200_FLOPS / HOUR)
    # MNLI: GLUE's 392,702 training pairs less the carved dev split (10 %), 3 epochs of 32, 3 seeds;
    # [s] premise $ hypothesis [e] with the assumed 28 + 14 tokens.
    mnli = row(figures["finetuning"], method="full", task="mnli")
    examples = 392_702 - round(392_702 * 0.1)
    assert mnli["examples"] == examples == 353_432
    assert mnli["updates_per_run"] == 3 * math.ceil(353_432 / 32) == 33_135
    assert mnli["tokens"] == 3 * 3 * 353_432 * (28 + 14 + 3)
    assert mnli["flops"] == 6 * parameters * mnli["tokens"]
    assert mnli["gpu_hours"] == pytest.approx(6 * parameters * mnli["tokens"] / H200_FLOPS / HOUR)
    # RACE: 87,866 questions, each 4 sequences of the assumed 432-token context and 7-token option.
    race = row(figures["finetuning"], method="no_aux_lm", task="race")
    assert race["tokens"] == 3 * 3 * 87_866 * 4 * (432 + 7 + 3)
    # mnli_mm is scored with mnli's model: no row of its own
    assert [entry for entry in figures["finetuning"] if entry["task"] == "mnli_mm"] == []
    assert figures["scored_with_another_model"] == ["mnli_mm"]
    assert len(figures["finetuning"]) == 4 * 12 + 2 + 2


def test_more_gpus_divide_pretraining_and_run_fine_tuning_jobs_side_by_side(no_data):
    params = profile("paper")
    one, two, eight = (plan(params, gpus) for gpus in (1, 2, 8))
    for first, second in zip(one["pretraining"], eight["pretraining"]):
        assert second["gpu_hours"] == first["gpu_hours"] and second["wall_hours"] == pytest.approx(first["wall_hours"] / 8)
    jobs, total = one["finetuning_jobs"], one["finetuning_gpu_hours"]
    race_layers = jobs["layer_transfer@race"]  # 12 runs of RACE: the longest job
    assert max(jobs.values()) == race_layers and one["longest_job"] == "layer_transfer@race"
    assert one["finetuning_wall_hours"] == pytest.approx(total)
    assert two["finetuning_wall_hours"] == pytest.approx(total / 2) and total / 2 > race_layers
    assert eight["finetuning_wall_hours"] == pytest.approx(race_layers) and total / 8 < race_layers
    pretraining_wall = sum(entry["gpu_hours"] for entry in one["pretraining"]) / 8
    assert eight["total_wall_hours"] == pytest.approx(pretraining_wall + race_layers)


def test_a_benchmark_file_replaces_the_measured_rate(no_data, capsys):
    (no_data / "mine.json").write_text(json.dumps({"paper": {
        "gpt1": {"tokens_per_second": 1000.0}, "flops_per_token": 2.0e9, "device_name": "NVIDIA A100-SXM4-80GB",
        "batch": 32, "seq": 512, "compile": True, "precision": "bf16 autocast", "lm_loss": "dense"}}))
    figures = plan_report.main(profile("tiny"), throughput=no_data / "mine.json", output=no_data / "out/plan.json")
    transformer = row(figures["pretraining"], model="Transformer")
    assert transformer["gpu_hours"] == pytest.approx(transformer["flops"] / (1000.0 * 2.0e9) / HOUR)
    printed = capsys.readouterr().out
    assert "1,000 tokens/s x 2,000.0 MFLOP a token = 2.0 TFLOP/s achieved" in printed
    assert "NVIDIA A100-SXM4-80GB" in printed and "mine.json" in printed
    assert json.loads((no_data / "out/plan.json").read_text()) == json.loads(json.dumps(figures))


@pytest.mark.parametrize("arguments, message", [
    (["--gpus", "0"], "--gpus 0: give at least 1 GPU"),
    (["--throughput", "bench.json"], "--throughput bench.json: result 'paper' lacks gpt1.tokens_per_second or "
     "flops_per_token (the fields `gpt1 benchmark --output` writes)"),
])
def test_bad_input_is_one_line(no_data, capsys, arguments, message):
    (no_data / "bench.json").write_text(json.dumps({"paper": {"gpt1": {"mfu": 0.4}}}))
    assert cli_main(["--params", str(ROOT / "params.yaml"), "plan", *arguments]) == 2
    assert capsys.readouterr().err.splitlines() == [f"gpt1 plan: error: {message}"]


def quoted_plans(page: str) -> list[tuple[list[str], list[str]]]:
    """(the command's words, the output lines shown under it) of every `$ gpt1 ... plan ...` line of the page's
    console blocks."""
    found = []
    for block in page.split("```console\n")[1:]:
        command = None
        for line in block.split("```", 1)[0].splitlines():
            if line.startswith("$ "):
                words = shlex.split(line[2:])
                command = (words, []) if words[0] == "gpt1" and "plan" in words else None
                if command:
                    found.append(command)
            elif command:
                command[1].append(line)
    return found


def test_docs_paper_run_md_quotes_the_plan_as_the_command_prints_it(no_data, capsys):
    """docs/paper-run.md shows `gpt1 ... plan` commands with lines of their output, "..." where lines are left out:
    each stretch between two "..." as the command prints it now, consecutive and in order, so the page cannot drift
    from the code. To renew them, run the commands in a checkout without data/ and paste their output."""
    page = (ROOT / "docs" / "paper-run.md").read_text()
    (no_data / "params.yaml").write_text((ROOT / "params.yaml").read_text())
    (no_data / "profiles").symlink_to(ROOT / "profiles")
    plans = quoted_plans(page)
    assert len(plans) >= 2
    for words, quoted in plans:
        assert cli_main(words[1:]) == 0, words
        printed = capsys.readouterr().out.splitlines()
        stretches = [list(lines) for elided, lines in itertools.groupby(quoted, key=lambda line: line == "...")
                     if not elided]
        assert any(line.startswith("In all: ") for line in quoted), words
        position = 0
        for stretch in stretches:
            starts = [i for i in range(position, len(printed) - len(stretch) + 1)
                      if printed[i:i + len(stretch)] == stretch]
            assert starts, (shlex.join(words), stretch)
            position = starts[0] + len(stretch)


def test_the_plan_knows_the_corpus_exactly_once_tokenized_and_measures_a_local_folder(no_data):
    params = profile("paper")
    (no_data / "data/tokens").mkdir(parents=True)
    meta = {"vocab_size": 40_481, "train": {"tokens": 1_000_000_000, "characters": 4_700_000_000}}
    (no_data / "data/tokens/meta.json").write_text(json.dumps(meta))
    figures = plan(params)
    assert figures["corpus"] == {"tokens": 1_000_000_000, "exact": True, "source": "exact: data/tokens/meta.json",
                                 "bytes": 4_700_000_000}
    assert row(figures["pretraining"], model="Transformer")["updates"] == math.ceil(100 * 1e9 / 32_768)
    # the default's tokenized corpus (2,000 merges) is not the paper profile's: the plan estimates instead
    (no_data / "data/tokens/meta.json").write_text(json.dumps({"vocab_size": 3_387, "train": {"tokens": 7_255_475}}))
    assert not plan(params)["corpus"]["exact"]
    (no_data / "data/tokens/meta.json").unlink()
    books = no_data / "my_books"
    books.mkdir()
    (books / "one.txt").write_text("x" * 400_000)
    (books / "two.txt").write_text("y" * 600_000)
    (no_data / "books.yaml").write_text(yaml.safe_dump({"data": {"corpus": ["books"],
                                                                 "local_paths": {"books": str(books)}}}))
    mine = load_params(ROOT / "params.yaml", [ROOT / "profiles" / "paper.yaml", no_data / "books.yaml"])
    corpus = plan(mine)["corpus"]
    assert corpus["tokens"] == round(1_000_000 / BYTES_PER_TOKEN[40_000]) and not corpus["exact"]
    assert corpus["source"].startswith("estimate: books 1.0 MB")


def test_a_corpus_of_unknown_size_with_epochs_is_one_clear_error(no_data, capsys):
    (no_data / "books.yaml").write_text(yaml.safe_dump({"data": {"corpus": ["books"]}}))
    words = ["--params", str(ROOT / "params.yaml"), "--profile", str(ROOT / "profiles" / "paper.yaml"), "--profile",
             str(no_data / "books.yaml"), "plan"]
    assert cli_main(words) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert "pretrain.epochs counts the transformer's updates over the corpus, whose size is not known" in line
    assert "unknown until prepared or set: books" in line
