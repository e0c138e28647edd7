"""One MNLI model for both of its sets: mnli_mm has no job; each seed of mnli's job also writes mnli_mm's seed folder
inside its own output, scored with that seed's model on mnli_mm's own dev and test splits, and a resumed job restores
both."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest

from finetune_project import finetune_project, run_finetune
from gpt1 import layout
from gpt1.params.schema import parse_params
from gpt1.data.registry import TASKS
from gpt1.methods import resolve
from gpt1.model.task_tokens import TaskTokens
from gpt1.params.files import compose_raw
from gpt1.train import finetune
from gpt1.train.seed_state import FINISHED_RECORD

ROOT = Path(__file__).resolve().parents[1]
RUNS = Path("results/finetune/full")


def _files(folder: Path) -> dict[str, bytes]:
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def test_the_paper_profile_trains_each_training_file_once():
    """What trains in the paper profile: every task of data.tasks, one job per method each; mnli brings mnli_mm,
    which its jobs score; no two trained tasks read the same training file (MNLI's train.tsv once, for both sets)."""
    from gpt1.pipeline import dag

    raw, _ = compose_raw(ROOT / "params.yaml", [ROOT / "profiles/paper.yaml"])
    params = parse_params(raw, "paper")
    trained = params.data.tasks
    assert "mnli" in trained and "mnli_mm" not in trained and "mnli_mm" in params.data.scored_tasks
    jobs = [stage.name for stage in dag.resolve(ROOT / "dvc.yaml", raw) if stage.name.startswith("finetune@")]
    assert sorted(jobs) == sorted(f"finetune@{method}-{task}" for method in params.finetune.methods
                                  for task in trained)
    assert not [job for job in jobs if "mnli_mm" in job]
    training_files = [(TASKS[task].sources, TASKS[task].load.keywords.get("folder"),
                       TASKS[task].load.keywords.get("files", {}).get("train"))
                      if hasattr(TASKS[task].load, "keywords") else (TASKS[task].sources, task) for task in trained]
    assert len(set(training_files)) == len(training_files), training_files


def test_the_job_trains_mnli_once_and_writes_mnli_mms_seeds_from_its_models(tmp_path):
    project = finetune_project(tmp_path / "project", tasks=("mnli", "mnli_mm"), max_eval_examples=None)
    done = run_finetune(project, task="mnli")
    assert done.returncode == 0, done.stderr
    assert "mnli_mm / full / seed" not in done.stderr  # no training log line of its own
    assert done.stderr.count(" train examples, ") == 2  # the one training of each seed: mnli's
    for seed in (1, 2):
        mnli, mismatched = project / RUNS / "mnli" / f"seed{seed}", project / RUNS / "mnli" / "mnli_mm" / f"seed{seed}"
        assert sorted(_files(mismatched)) == ["metrics.json", "model_card.md", "predictions_dev.jsonl",
                                              "predictions_test.jsonl"]
        # its dev split is mnli's: the very same model gives the very same predictions
        assert (mismatched / "predictions_dev.jsonl").read_bytes() == (mnli / "predictions_dev.jsonl").read_bytes()
        assert (mismatched / "predictions_test.jsonl").read_bytes() != (mnli / "predictions_test.jsonl").read_bytes()
        card = (mismatched / "model_card.md").read_text()
        assert "# Fine-tuning run: mnli_mm / full / seed" in card and "fine-tuned as mnli's run" in card
        # the command the CLI takes, spelled by the stage table: the job's options in its order, then the seed
        reproduce = f"Reproduce: `gpt1 finetune --method full --task mnli --seed {seed}`"
        assert reproduce in card and reproduce in (mnli / "model_card.md").read_text()
        metrics = json.loads((mismatched / "metrics.json").read_text())
        assert set(metrics) == {"dev", "test"} and "accuracy" in metrics["test"]
    assert (project / RUNS / "mnli" / "seed1" / "model.safetensors").is_file()

    for given in ((), ("--seed", "1")):  # neither a job nor a one-off run of its own
        refused = run_finetune(project, *given, task="mnli_mm")
        assert refused.returncode != 0 and "Traceback" not in refused.stderr
        assert "by mnli's job: run --task mnli" in refused.stderr


def test_a_finished_seed_restores_the_scored_tasks_folder_too(tmp_path, monkeypatch, caplog):
    caplog.set_level(logging.INFO, logger="gpt1.train.finetune")
    project = finetune_project(tmp_path / "project", tasks=("mnli", "mnli_mm"), max_eval_examples=None, seeds=[1])
    params = parse_params(__import__("yaml").safe_load((project / "params.yaml").read_text()))
    tokens = {task: TaskTokens.load(layout.task_tokens(task, project / layout.TASK_TOKENS, model_of))
              for task, model_of in (("mnli", None), ("mnli_mm", "mnli"))}
    out, state = tmp_path / "out", tmp_path / "state"

    def run_job():
        return finetune.run_seeds(finetune.FinetuneSettings.of(params), tokens["mnli"], resolve("full", params), [1],
                                  pretrain_dir=project / layout.PRETRAIN, out_root=out / "mnli",
                                  state_root=state, scored_too=[(tokens["mnli_mm"], out / "mnli_mm")])

    run_job()
    assert (state / "seed1" / FINISHED_RECORD).is_file()
    written = _files(out)
    assert sorted({name.split("/")[0] for name in written}) == ["mnli", "mnli_mm"]
    shutil.rmtree(out)  # as DVC deletes a job's outputs before it runs it again
    monkeypatch.setattr(finetune, "train", lambda *args, **kwargs: pytest.fail("a finished seed was trained again"))
    run_job()
    assert "not trained again" in caplog.text
    assert _files(out) == written
