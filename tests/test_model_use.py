"""Using what the pipeline trains: sampling text, predicting with a kept fine-tuned model, exporting weights."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from gpt1 import cli
from gpt1.commands import generate
from gpt1.commands import predict
from gpt1.data.records import read_examples
from gpt1.data.task_data import seeded_subset
from gpt1.errors import UserError
from gpt1.model import weights
from gpt1.model.lm import build_model, load_model, save_model
from gpt1.model.task_checkpoint import load_task_model
from test_cli import gpt1
from test_finetune import SPECS, run, tiny_params
from test_finetune import one_thread, workspace  # noqa: F401 (fixtures used by name)
from test_transforms import tiny_bpe


def tiny_language_model(kind: str = "transformer", vocab_size: int = 60, seed: int = 0):
    torch.manual_seed(seed)
    if kind == "transformer":
        config = dict(vocab_size=vocab_size, n_positions=16, n_layer=2, n_head=2, d_model=32, d_ff=128)
    else:
        config = dict(vocab_size=vocab_size, d_embed=32, d_hidden=48, n_layer=1)
    return build_model(kind, config).eval()


# --- generate ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["transformer", "lstm"])
def test_greedy_sampling_is_argmax_decoding_step_by_step(kind):
    model = tiny_language_model(kind)
    prompt = [3, 7, 11]
    greedy = generate.sample(model, prompt, 20, temperature=0)
    tokens = list(prompt)
    with torch.no_grad():
        for _ in range(20):  # the whole sequence each step (no cache), cut to the model's window
            logits = model(torch.tensor([tokens[-generate.window(model):]]))[0, -1]
            tokens.append(int(logits.argmax()))
    assert greedy == tokens[len(prompt):]
    assert generate.sample(model, prompt, 20, temperature=1.0, top_k=1, seed=5) == greedy


def test_sampling_is_deterministic_for_a_seed_and_varies_across_seeds():
    model = tiny_language_model()
    first = generate.sample(model, [1, 2], 30, temperature=1.5, seed=3)
    assert first == generate.sample(model, [1, 2], 30, temperature=1.5, seed=3)
    assert first != generate.sample(model, [1, 2], 30, temperature=1.5, seed=4)


def test_top_k_draws_only_among_the_k_likeliest_tokens():
    logits = torch.tensor([0.0, 5.0, 4.0, -1.0, 3.0])
    generator = torch.Generator().manual_seed(0)
    drawn = {generate.next_token(logits, 1.0, 2, generator) for _ in range(200)}
    assert drawn == {1, 2}


def test_special_tokens_are_never_sampled():
    model = tiny_language_model()
    with torch.no_grad():
        model.tokens_embed.weight[57:] = 50 * model.tokens_embed.weight[:3].abs().sum()  # would dominate
    tokens = generate.sample(model, [1, 2], 30, temperature=2.0, seed=0, allowed=57)
    assert max(tokens) < 57


def test_a_model_of_another_vocabulary_is_refused():
    bpe = tiny_bpe()
    with pytest.raises(UserError, match="pass the BPE the model was trained with"):
        generate.generate_text(tiny_language_model(vocab_size=bpe.vocab_size + 5), bpe, "the film", 5, 1.0, None, 0)


def test_generate_command_continues_a_prompt_from_a_checkpoint(tmp_path, capsys):
    bpe = tiny_bpe()
    bpe.save(tmp_path / "bpe")
    save_model(tiny_language_model(vocab_size=bpe.vocab_size), tmp_path / "model.safetensors")
    argv = ["generate", "--model", str(tmp_path / "model.safetensors"), "--bpe", str(tmp_path / "bpe"),
            "--prompt", "the film was", "--max-new-tokens", "12", "--seed", "2"]
    assert cli.main(argv) == 0
    first = capsys.readouterr().out
    assert cli.main(argv) == 0
    assert capsys.readouterr().out == first and first.strip()
    assert cli.main(argv[:-2] + ["--temperature", "-1"]) == 2
    assert "--temperature" in capsys.readouterr().err


# --- predict -------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def kept_runs(workspace):  # noqa: F811 (the imported fixture)
    """rt_polarity (classification), sts-like regression and social_iqa (multiple choice), weights kept."""
    runs = {}
    for task in ("rt_polarity", "lee_similarity", "social_iqa"):
        _, out_dir = run(workspace, task, "full", out=f"kept-{task}", save_weights=True)
        runs[task] = out_dir
    return runs


@pytest.mark.parametrize("task", ["rt_polarity", "lee_similarity", "social_iqa"])
def test_predict_on_the_test_split_equals_the_stage_predictions(workspace, kept_runs, task):  # noqa: F811
    """The same rows the stage scored (its seeded test sample), fed as a user would, in the task's fields."""
    params = tiny_params()
    rows = seeded_subset(read_examples(workspace / "tasks" / task / "test.jsonl", SPECS[task].family),
                         params.finetune.max_eval_examples, params.seed, task, "test")
    lines = [json.dumps({k: v for k, v in vars(row).items() if k != "label"}) for row in rows]
    got = predict.predictions(kept_runs[task], lines, workspace / "bpe")
    stage = [json.loads(line) for line in (kept_runs[task] / "predictions_test.jsonl").read_text().splitlines()]
    assert [row["prediction"] for row in got] == [row["prediction"] for row in stage]
    assert [row.get("probabilities") for row in got] == [row.get("probabilities") for row in stage]
    if task == "rt_polarity":
        assert {row["prediction_name"] for row in got} <= {"negative", "positive"}


def test_predict_reads_plain_text_lines_for_classification_and_echoes_labels(workspace, kept_runs):  # noqa: F811
    got = predict.predictions(kept_runs["rt_polarity"], ["the film was good fine great .\n",
                                                         '{"text": "bad poor awful", "label": 0}'], workspace / "bpe")
    assert [row["index"] for row in got] == [0, 1] and "label" not in got[0] and got[1]["label"] == 0


@pytest.mark.parametrize("task, line, message", [
    ("rt_polarity", "   \n", "empty line"),
    ("rt_polarity", '{"txt": "a film"}', r"missing \['text'\], unknown \['txt'\]"),
    ("social_iqa", "who smiled?", "reads JSON lines with the fields"),
    ("social_iqa", '{"context": "who?", "choices": ["tom"]}', "at least 2 choices"),
    ("social_iqa", '{"context": "who?", "choices": "tom, ann"}', "choices must be a JSON list"),
    ("rt_polarity", '{"text": "a film", "label": 7}', "outside the task's label set"),
    ("rt_polarity", '{"text": ', "not valid JSON"),
])
def test_bad_predict_input_is_one_clear_error(workspace, kept_runs, task, line, message):  # noqa: F811
    with pytest.raises(UserError, match=message) as error:
        predict.predictions(kept_runs[task], [line], workspace / "bpe", source="in.jsonl")
    assert str(error.value).startswith("in.jsonl:1")


def test_predict_names_a_run_without_weights(workspace, tmp_path):  # noqa: F811
    _, out_dir = run(workspace, "rt_polarity", "full", out="no-weights")
    with pytest.raises(UserError, match="keeps the weights of the first seed"):
        predict.predictions(out_dir, ["a film"], workspace / "bpe")


def test_predict_command_and_the_kept_model_round_trip(workspace, kept_runs, tmp_path, capsys):  # noqa: F811
    task_model, described = load_task_model(kept_runs["social_iqa"] / "model.safetensors")
    assert described.task == "social_iqa" and described.spec == SPECS["social_iqa"] and not task_model.training
    examples = tmp_path / "in.jsonl"
    examples.write_text('{"context": "tom met ann. who smiled?", "choices": ["tom", "ann", "both"]}\n')
    assert cli.main(["predict", "--run", str(kept_runs["social_iqa"]), "--input", str(examples),
                     "--bpe", str(workspace / "bpe")]) == 0
    row = json.loads(capsys.readouterr().out)
    assert len(row["probabilities"]) == 3 and row["prediction"] in (0, 1, 2)


# --- export ---------------------------------------------------------------------------------------------------

def test_openai_export_reads_back_bit_identically(tmp_path):
    model = tiny_language_model()
    weights.export_openai(model, tmp_path / "release", files=3)
    assert sorted(p.name for p in (tmp_path / "release").iterdir()) == [
        ".gpt1-output", "params_0.npy", "params_1.npy", "params_2.npy", "params_shapes.json"]
    back = weights.import_openai(tmp_path / "release", n_head=2)
    for name, tensor in model.state_dict().items():
        assert torch.equal(tensor, back.state_dict()[name]), name


def test_hf_export_loads_in_transformers_with_equal_logits(tmp_path):
    transformers = pytest.importorskip("transformers")
    bpe = tiny_bpe()
    bpe.save(tmp_path / "bpe")
    model = tiny_language_model(vocab_size=bpe.vocab_size)
    save_model(model, tmp_path / "model.safetensors")
    result = gpt1("export-weights", "--model", tmp_path / "model.safetensors", "--format", "hf",
                  "--out", tmp_path / "hf", "--bpe", tmp_path / "bpe", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    reference = transformers.OpenAIGPTLMHeadModel.from_pretrained(tmp_path / "hf").eval()
    tokenizer = transformers.OpenAIGPTTokenizer.from_pretrained(tmp_path / "hf")
    text = "the film was good ."
    assert tokenizer.encode(text) == bpe.encode(text)
    ids = torch.tensor([bpe.encode(text)])
    with torch.no_grad():
        ours, theirs = load_model(tmp_path / "model.safetensors")(ids), reference(ids).logits
    np.testing.assert_allclose(theirs.numpy(), ours.numpy(), rtol=1e-5, atol=1e-5)


def test_export_refuses_the_lstm(tmp_path):
    save_model(tiny_language_model("lstm"), tmp_path / "lstm.safetensors")
    result = gpt1("export-weights", "--model", tmp_path / "lstm.safetensors", "--format", "openai",
                  "--out", tmp_path / "out", cwd=tmp_path)
    assert result.returncode == 2 and "only the Transformer" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "out").exists()


@pytest.mark.parametrize("settings, message", [
    (dict(max_new_tokens=-1), "--max-new-tokens and --temperature must be finite numbers >= 0"),
    (dict(temperature=-0.5), "--max-new-tokens and --temperature must be finite numbers >= 0"),
    (dict(temperature=float("nan")), "--max-new-tokens and --temperature must be finite numbers >= 0"),
    (dict(top_k=0), "--top-k must be >= 1"),
])
def test_bad_sampling_settings_are_one_clear_error(settings, message):
    arguments = dict(max_new_tokens=5, temperature=1.0, top_k=None) | settings
    with pytest.raises(UserError, match=message):
        generate.sample(tiny_language_model(), [1, 2], **arguments)


def test_predict_names_a_language_model_given_as_a_run(tmp_path):
    save_model(tiny_language_model(), tmp_path / "model.safetensors")
    with pytest.raises(UserError, match="not a fine-tuned task model .* use `gpt1 generate`"):
        predict.predictions(tmp_path, ["a film"], tmp_path / "bpe")


def test_a_task_model_saved_under_the_methods_older_key_still_loads(kept_runs, tmp_path):  # noqa: F811
    """Models kept before the method's key was renamed (`variant` in the run's metadata) load as they did."""
    import dataclasses

    from gpt1.model import safetensors_file
    from gpt1.model.task_checkpoint import METADATA_KEY

    task_model, described = load_task_model(kept_runs["social_iqa"] / "model.safetensors")
    run = dataclasses.asdict(described)
    run["variant"] = run.pop("method")
    language_model = task_model.language_model
    older = tmp_path / "older.safetensors"
    safetensors_file.write(task_model, older, METADATA_KEY, {
        "kind": language_model.kind, "config": dataclasses.asdict(language_model.config), "run": run})
    reloaded, again = load_task_model(older)
    assert again == described
    assert all(torch.equal(a, b) for a, b in zip(reloaded.state_dict().values(), task_model.state_dict().values()))
