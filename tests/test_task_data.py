"""What fine-tuning, the baselines and zero-shot evaluate: the same seeded sample of dev and test rows."""

from gpt1.data.records import ClassificationExample
from gpt1.data.task_data import seeded_subset

ROWS = [ClassificationExample(text=f"row {i}", label=i % 2) for i in range(3000)]


def test_seeded_subset_is_a_seeded_sample_in_file_order_across_the_whole_file():
    chosen = seeded_subset(ROWS, 1000, seed=7, task="t", split="test")
    indices = [int(e.text.split()[1]) for e in chosen]
    assert len(indices) == 1000 == len(set(indices))
    assert indices == sorted(indices)
    # Drawn from the whole file (sorted files, such as STS-B's by genre, must not give one genre): not the head.
    assert indices != list(range(1000)) and max(indices) > 2500 and min(indices) < 500
    assert chosen == seeded_subset(ROWS, 1000, seed=7, task="t", split="test")
    assert chosen != seeded_subset(ROWS, 1000, seed=7, task="t", split="dev")


def test_seeded_subset_keeps_a_short_split_whole():
    assert seeded_subset(ROWS[:10], 1000, seed=7, task="t", split="dev") == ROWS[:10]
    assert seeded_subset(ROWS, None, seed=7, task="t", split="dev") == ROWS
