"""The paper profile's tasks run through the same prepare and finetune code, scored with the paper's metric.

Each task's fixture archive (tests/fixtures_paper.py, in the upstream format) is served over local HTTP,
fetched, prepared into splits, and fine-tuned for one step by a tiny pretrained-shaped model.
"""

import copy

import pytest
import yaml

from gpt1.train import finetune
from gpt1.methods import resolve
from gpt1.data.task_data import Samples, load_task_data
from gpt1.model.task_encoding import encode_task
from gpt1.data import prepare
from gpt1.tokenizer.bpe import Gpt1Bpe, count_words, train_merges
from gpt1.params.schema import parse_params
from gpt1.model.lm import build_model, save_model
from gpt1.data.paper_sources import PAPER_SOURCES
from gpt1.data.paper_tasks import PAPER_TASKS
from gpt1.data.records import read_examples, texts_of
from gpt1.data.sources import fetch_source
from gpt1.data.cleanup import clean
from test_paper_tasks import CASES, server, served  # noqa: F401  (server is a fixture)

import fixtures_paper as fx

ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]


def _params(task: str):
    raw = copy.deepcopy(yaml.safe_load((ROOT / "params.yaml").read_text()))
    trained = PAPER_TASKS[task].spec.model_of  # mnli_mm is scored with mnli's model: mnli brings it
    raw["data"].update(tasks=[trained or task], task_dev_fraction=0.25, task_test_fraction=0.25)
    task = trained or task  # the analyses fine-tune a task that trains its own model
    raw["model"] = dict(n_positions=64, n_layer=1, n_head=2, d_model=16, d_ff=32, dropout=0.0, attn_dropout=0.0)
    raw["finetune"].update(seeds=[1], batch_size=2, epochs=1, max_train_examples=None, max_eval_examples=None,
                           device="cpu", dtype="float32", lr=1e-3)
    raw["analysis"].update(layer_transfer_tasks=[task], layer_transfer_layers=[0], layer_transfer_seeds=[1],
                           transfer_curve_tasks=[task])
    if PAPER_TASKS[task].spec.is_regression:  # Figure 2 (left) refuses regression tasks: validate with one it
        raw["data"]["tasks"].append("cola")  # accepts, then keep only the task under test (no layer transfer here)
        raw["analysis"]["layer_transfer_tasks"] = ["cola"]
        params = parse_params(raw, "tiny paper params")
        return params.model_copy(update={"data": params.data.model_copy(update={"tasks": [task]})})
    return parse_params(raw, "tiny paper params")


@pytest.mark.parametrize("task", [*CASES, "story_cloze"])
def test_paper_task_fine_tunes_and_scores_with_its_metric(task, server, tmp_path):  # noqa: F811
    raw = tmp_path / "raw"
    if task == "story_cloze":
        fx.write_tree(tmp_path / "registered", fx.STORY_CLOZE)
        fetch_source(PAPER_SOURCES["story_cloze"], tmp_path / "cache", raw, {"story_cloze": tmp_path / "registered"})
    else:
        for name, payload in CASES[task][0].items():
            fetch_source(served(server, PAPER_SOURCES[name], payload), tmp_path / "cache", raw)
    params = _params(task)
    prepare.prepare_tasks(params.data, params.seed, raw, tmp_path / "tasks")

    spec = PAPER_TASKS[task].spec
    texts = [clean(text) for split in ("train", "dev", "test")
             for example in read_examples(tmp_path / "tasks" / task / f"{split}.jsonl", spec.family)
             for text in texts_of(example)]
    bpe = Gpt1Bpe.from_merges(*train_merges(count_words(texts), 20))
    bpe.save(tmp_path / "bpe")
    shape = params.model.model_dump()
    dropout = shape.pop("dropout")
    model = build_model("transformer", dict(**shape, vocab_size=len(bpe.encoder), embd_dropout=dropout,
                                            resid_dropout=dropout))
    save_model(model, tmp_path / "pretrain" / "transformer" / "model.safetensors")

    tokens = encode_task(task, load_task_data(Samples.of(params), task, tmp_path / "tasks"), bpe)
    metrics = finetune.run(finetune.FinetuneSettings.of(params), tokens, resolve("full", params), 1,
                           pretrain_dir=tmp_path / "pretrain", out_dir=tmp_path / "out")
    for split in ("dev", "test"):
        assert set(spec.metrics) <= set(metrics[split]), (split, metrics[split])
    assert (tmp_path / "out" / "predictions_test.jsonl").read_text().strip()
