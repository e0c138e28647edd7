"""A task's tokens are encoded once (stage encode_task) and every fine-tuning job of the task builds its input
sequences from them: what it builds must be exactly what encoding the task's files directly gives."""

from __future__ import annotations

import pytest

from gpt1.data.task_data import Samples, load_task_data
from gpt1.errors import UserError
from gpt1.model.task_tokens import TaskTokens
from gpt1.model.task_encoding import encode_examples, encode_task
from test_finetune import SPECS, tiny_params, write_task
from test_transforms import tiny_bpe


@pytest.mark.parametrize("task", sorted(SPECS))  # one per family
def test_saved_tokens_give_the_input_sequences_of_encoding_the_task_directly(tmp_path, task):
    params, bpe = tiny_params(), tiny_bpe()
    write_task(tmp_path / "tasks" / task, SPECS[task])
    data = load_task_data(Samples.of(params), task, tmp_path / "tasks")
    encode_task(task, data, bpe).save(tmp_path / "task_tokens" / task)
    loaded = TaskTokens.load(tmp_path / "task_tokens" / task)
    assert (loaded.task, loaded.spec, loaded.full_sizes) == (task, data.spec, data.full_sizes)
    assert loaded.vocab_size == bpe.vocab_size
    for n_ctx in (6, 9, 64):  # cut hard, cut a little, and whole
        built = loaded.encoded(n_ctx)
        for split, examples in data.splits.items():
            assert built[split] == encode_examples(examples, data.spec, bpe, n_ctx), (split, n_ctx)
    first = {path.name: path.read_bytes() for path in (tmp_path / "task_tokens" / task).iterdir()}
    encode_task(task, data, bpe).save(tmp_path / "again" / task)
    assert {path.name: path.read_bytes() for path in (tmp_path / "again" / task).iterdir()} == first


def test_missing_tokens_name_the_stage_that_makes_them(tmp_path):
    with pytest.raises(UserError, match=r"task_tokens/sts_b/tokens.json not found; run `dvc repro encode_task` \(it "
                                        r"encodes every task of data.tasks\)"):
        TaskTokens.load(tmp_path / "task_tokens" / "sts_b")
