"""The training loop's batching: length-grouped batches keep every example and cut padding."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from sweetflow.rl.batching import LengthGroupedBatches


def padded(batches: list[list[int]], lengths: list[int]) -> int:
    return sum(len(batch) * max(lengths[i] for i in batch) for batch in batches)


@settings(max_examples=60, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 2000), min_size=1, max_size=900),
    batch_size=st.integers(1, 16),
    seed=st.integers(0, 1000),
)
def test_every_epoch_holds_every_example_once_in_full_batches(lengths, batch_size, seed):
    sampler = LengthGroupedBatches(lengths, batch_size, seed)
    for _ in range(2):
        batches = list(sampler)
        assert len(batches) == len(sampler)
        assert sorted(i for batch in batches for i in batch) == list(range(len(lengths)))
        # Only the last window's last batch may be short.
        assert sum(len(batch) < batch_size for batch in batches) <= 1


def test_batches_pad_less_than_shuffled_ones_and_vary_by_epoch():
    rng = random.Random(0)
    lengths = [rng.randint(200, 1000) for _ in range(1000)]
    sampler = LengthGroupedBatches(lengths, 8, seed=0)
    first, second = list(sampler), list(sampler)
    shuffled = list(range(len(lengths)))
    rng.shuffle(shuffled)
    random_batches = [shuffled[i : i + 8] for i in range(0, len(shuffled), 8)]
    waste = 1 - sum(lengths) / padded(first, lengths)
    assert waste < 0.05 < 1 - sum(lengths) / padded(random_batches, lengths)
    assert first != second  # a new order each epoch
    assert list(LengthGroupedBatches(lengths, 8, seed=0)) == first  # and the same one for the same seed
    # Long and short batches are spread over the epoch, not sorted.
    widths = [max(lengths[i] for i in batch) for batch in first]
    assert widths != sorted(widths) and widths != sorted(widths, reverse=True)
