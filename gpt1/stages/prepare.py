"""Stage `prepare`: tasks -> fixed splits; corpus -> cleaned, deduplicated, decontaminated train/val
(gpt1/data/prepare.py says how)."""

from __future__ import annotations

import logging
from pathlib import Path

from gpt1 import layout
from gpt1.files.atomic import atomic_directory
from gpt1.params.schema import Params
from gpt1.data.prepare import evaluation_sentence_keys, prepare_corpus, prepare_tasks, zero_shot_sentence_keys
from gpt1.files.parallel import Workers

log = logging.getLogger(__name__)


def run(params: Params, raw: Path = layout.RAW, tasks_out: Path = layout.TASKS,
        corpus_out: Path = layout.CORPUS) -> None:
    # One set of worker processes for the tasks and every corpus part; the tasks' folder lands only once the corpus
    # is written too, so a bad file of a user's corpus part (found while it is read) leaves no half-written output.
    with Workers() as workers, atomic_directory(tasks_out) as tasks_staging:
        prepared = prepare_tasks(params.data, params.seed, raw, tasks_staging, workers)
        banned = evaluation_sentence_keys(prepared) | zero_shot_sentence_keys(raw)
        log.info("%d distinct dev/test sentences are kept out of the corpus", len(banned))
        prepare_corpus(params.data, params.seed, raw, corpus_out, banned, prepared, workers)


def main(args, params: Params) -> None:
    run(params)
