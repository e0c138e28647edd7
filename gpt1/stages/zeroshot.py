"""Stage `zeroshot`: the selected tasks' zero-shot heuristics over every pretraining checkpoint (Figure 2,
right; gpt1/eval/zeroshot.py), from the candidates `encode-zeroshot` wrote: no BPE, no spaCy here."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Sequence

import pandas as pd

from gpt1 import layout
from gpt1.files.tokens_meta import training_tokens
from gpt1.params import applicability
from gpt1.params.schedule import PretrainSchedule
from gpt1.params.schema import Params
from gpt1.errors import UserError
from gpt1.eval.figures import not_applicable
from gpt1.eval.zeroshot import evaluate_checkpoints, find_checkpoints, plot, trend, write_csv
from gpt1.eval.zeroshot_candidates import read_tasks
from gpt1.train import precision

log = logging.getLogger(__name__)


def run(params: Params, candidates: Path = layout.zero_shot_tasks(), pretrain_dir: Path = layout.PRETRAIN,
        results: layout.Results = layout.Results(), kinds: Sequence[str] | None = None,
        batch_size: int = 64) -> pd.DataFrame | None:
    """Score `kinds` (default: every kind this run has a model of); None where no model is pretrained here."""
    reason = applicability.zero_shot(params.pretrain)
    if reason:
        not_applicable([results.zero_shot, results.zero_shot_trend], results.zero_shot_plot, reason)
        log.info("%s: %s", applicability.NOT_APPLICABLE, reason)
        return None
    tasks = read_tasks(candidates)
    if not tasks:
        raise UserError("no zero-shot heuristic has data: data.tasks names no sentiment, acceptability or "
                        "multiple-choice task (e.g. rt_polarity, sst2, cola, social_iqa, race, story_cloze), and "
                        "the BIG-bench agreement pairs were not downloaded")
    kinds = applicability.scored_kinds(params.pretrain) if kinds is None else kinds
    tokens = training_tokens()
    checkpoints = {kind: find_checkpoints(pretrain_dir, kind, PretrainSchedule.of(params.pretrain, kind, tokens).updates)
                   for kind in kinds}
    device = precision.resolve_device(params.finetune.device, key="finetune.device")
    table = evaluate_checkpoints(tasks, checkpoints, params.model.n_positions, device, batch_size)
    write_csv(table, results.zero_shot)
    write_csv(trend(table), results.zero_shot_trend)
    plot(table, tasks, results.zero_shot_plot)
    log.info("wrote %s, %s and %s", results.zero_shot, results.zero_shot_trend, results.zero_shot_plot)
    return table


def main(args, params: Params) -> None:
    run(params)
