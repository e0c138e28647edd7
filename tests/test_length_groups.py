"""Fine-tuning batches run as groups of similar length: the split is optimal, and the states are unchanged."""

import itertools
import random

import pytest
import torch

from gpt1.model.heads import Batch, hidden_states, length_groups
from gpt1.model.lm import GPT1, LSTMConfig, LSTMLanguageModel, TransformerConfig


def _cost(groups, lengths, pass_cost):
    return sum(len(rows) * max(lengths[row] for row in rows) + pass_cost for rows in groups)


def _brute_force(lengths, pass_cost):
    """The cheapest split of the length-sorted rows into consecutive groups, by trying every split."""
    order = sorted(range(len(lengths)), key=lambda row: (lengths[row], row))
    best = None
    for cuts in itertools.product([False, True], repeat=len(order) - 1):
        groups, current = [], [order[0]]
        for row, cut in zip(order[1:], cuts):
            if cut:
                groups.append(current)
                current = []
            current.append(row)
        groups.append(current)
        cost = _cost(groups, lengths, pass_cost)
        best = cost if best is None else min(best, cost)
    return best


@pytest.mark.parametrize("trial", range(30))
def test_the_split_is_the_cheapest(trial):
    generator = random.Random(trial)
    lengths = [generator.randint(3, 128) for _ in range(generator.randint(1, 9))]
    pass_cost = generator.choice([0, 16, 64, 500])
    groups = length_groups(lengths, pass_cost)
    assert sorted(row for rows in groups for row in rows) == list(range(len(lengths)))
    assert _cost(groups, lengths, pass_cost) == _brute_force(lengths, pass_cost)


def test_similar_lengths_stay_one_group_and_far_apart_ones_split():
    assert length_groups([40, 42, 41, 40], 64) == [[0, 3, 2, 1]]
    assert length_groups([10, 120, 12, 118, 11, 119], 64) == [[0, 4, 2], [3, 5, 1]]


def _batch(lengths, vocab, width=128):
    generator = torch.Generator().manual_seed(0)
    input_ids = torch.zeros(len(lengths), max(lengths), dtype=torch.long)
    for row, length in enumerate(lengths):
        input_ids[row, :length] = torch.randint(0, vocab, (length,), generator=generator)
    count = len(lengths)
    return Batch(input_ids=input_ids, lengths=torch.tensor(lengths), example_index=torch.arange(count),
                 slot_index=torch.zeros(count, dtype=torch.long), labels=torch.zeros(count, dtype=torch.long),
                 slots=1, host_lengths=tuple(lengths))


@pytest.mark.parametrize("model", [
    GPT1(TransformerConfig(vocab_size=50, n_positions=64, n_layer=2, n_head=2, d_model=16, d_ff=32)),
    LSTMLanguageModel(LSTMConfig(vocab_size=50, d_embed=16, d_hidden=24))], ids=["transformer", "lstm"])
def test_grouped_states_equal_one_padded_pass_on_real_tokens(model):
    lengths = [5, 60, 6, 58, 7, 3]
    batch = _batch(lengths, 50)
    model.eval()
    with torch.no_grad():
        whole = model.hidden_states(batch.input_ids)
        grouped = hidden_states(model, batch)
    assert grouped.shape == whole.shape
    for row, length in enumerate(lengths):
        torch.testing.assert_close(grouped[row, :length], whole[row, :length], rtol=1e-5, atol=1e-6)
    if model.kind == "transformer":  # grouped: the long rows' padding is not computed for the short ones
        assert len(length_groups(lengths)) > 1 and not grouped[0, 7:].any()  # row 0 is in the group of length 7


def test_gradients_flow_through_every_group():
    torch.manual_seed(0)
    model = GPT1(TransformerConfig(vocab_size=50, n_positions=64, n_layer=1, n_head=2, d_model=16, d_ff=32)).eval()
    batch = _batch([4, 60, 5, 61], 50)
    states = hidden_states(model, batch)
    direction = torch.randn(16, generator=torch.Generator().manual_seed(0))  # a LayerNorm's outputs sum to 0
    (states[torch.arange(4), batch.lengths - 1] @ direction).sum().backward()
    assert model.tokens_embed.weight.grad[batch.input_ids[1, :60]].abs().sum() > 0
    assert model.tokens_embed.weight.grad[batch.input_ids[0, :4]].abs().sum() > 0


def test_a_batch_off_the_cpu_runs_as_one_pass():
    """On a GPU a fine-tuning pass costs its kernel launches, not its padded tokens (the first H100 run split each
    batch into ~5 passes): the same batch that a CPU groups runs whole elsewhere. The meta device stands in."""
    model = GPT1(TransformerConfig(vocab_size=50, n_positions=64, n_layer=1, n_head=2, d_model=16, d_ff=32))
    lengths = [5, 60, 6, 58, 7, 3]
    assert len(length_groups(lengths)) > 1
    passes = []
    model.hidden_states = lambda input_ids: passes.append(tuple(input_ids.shape)) or torch.zeros(
        *input_ids.shape, 16, device=input_ids.device)
    hidden_states(model, _batch(lengths, 50))
    assert len(passes) == len(length_groups(lengths))
    passes.clear()
    states = hidden_states(model, _batch(lengths, 50).to("meta"))
    assert passes == [(6, 60)] and states.device.type == "meta"
