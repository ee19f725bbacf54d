"""Batches for the trainers: right-padded rows, rows that share a prefix read once, preference
pairs laid out as the loss wants them, length-grouped batch order, and an optimiser step's batch
cut into the micro-batches of each process.

A preference batch holds 2P rows, [0, P) the chosen sequences and [P, 2P) the rejected ones in the
same pair order (TRL's and OpenRLHF's convention: one forward pass for both sides).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

import torch
from torch.utils.data import Sampler

from sweetflow.rl.sequences import NOT_SCORED, PairData, SegmentedSequence

LENGTH_WINDOW = 50  # batches whose examples are sorted by length together (as transformers' group_by_length)


def collate_segmented(sequences: Sequence[SegmentedSequence], pad_id: int) -> dict[str, torch.Tensor]:
    """Right-pad a batch; padding is out of attention and NOT_SCORED."""
    width = max(len(s.input_ids) for s in sequences)
    batch = {
        "input_ids": torch.full((len(sequences), width), pad_id, dtype=torch.long),
        "attention_mask": torch.zeros((len(sequences), width), dtype=torch.long),
        "segment_ids": torch.full((len(sequences), width), NOT_SCORED, dtype=torch.long),
    }
    for i, s in enumerate(sequences):
        n = len(s.input_ids)
        batch["input_ids"][i, :n] = torch.tensor(s.input_ids)
        batch["attention_mask"][i, :n] = 1
        batch["segment_ids"][i, :n] = torch.tensor(s.segment_ids)
    return batch


def collate_shared_prefix(sequences: Sequence[SegmentedSequence], pad_id: int) -> dict[str, torch.Tensor]:
    """A batch in which rows that start with the same tokens share one forward pass over them.

    Each sequence is cut before its first scored token: the prefix (prompt, state, the critic's
    training-time information) and the suffix (the responses and what follows). Rows whose prefixes
    are equal — the 16 candidates of a state, the two sides of a step pair, the samples of one task —
    point (`group`) at one row of `prefix_ids`. Both parts are right-padded; `segment_ids` are the
    suffix's. `segment_logps` reads the prefixes once and each suffix on top of its prefix's cache."""
    index: dict[tuple[int, ...], int] = {}
    prefixes, suffixes, groups = [], [], []
    for s in sequences:
        start = next((i for i, k in enumerate(s.segment_ids) if k != NOT_SCORED), None)
        if start is None:
            raise ValueError("a sequence has no scored token: nothing of it would be compared")
        if start == 0:
            raise ValueError("position 0 of a sequence cannot be scored: no logits predict it")
        key = tuple(s.input_ids[:start])
        if key not in index:
            index[key] = len(prefixes)
            prefixes.append(SegmentedSequence(list(key), [NOT_SCORED] * start))
        groups.append(index[key])
        suffixes.append(SegmentedSequence(s.input_ids[start:], s.segment_ids[start:]))
    prefix, suffix = collate_segmented(prefixes, pad_id), collate_segmented(suffixes, pad_id)
    return {
        "prefix_ids": prefix["input_ids"],
        "prefix_mask": prefix["attention_mask"],
        "group": torch.tensor(groups, dtype=torch.long),
        **suffix,
    }


def batch_tokens(batch: dict[str, torch.Tensor]) -> int:
    """Tokens a forward pass over the batch reads (for tokens/s)."""
    return int(batch["attention_mask"].sum()) + int(batch["prefix_mask"].sum() if "prefix_mask" in batch else 0)


def collate_pairs(
    pairs: list[tuple[int, int]], data: PairData, ref_sums: torch.Tensor, pad_id: int, share_prefixes: bool = True
) -> dict:
    """The batch's distinct sequences, each read once (with shared prefixes read once too, unless
    `share_prefixes` is off: gradient checkpointing keeps no cache), and `rows`, which lays their
    scores out as PreferenceLoss wants them — chosen rows first, then rejected rows in the same
    order — next to the cached reference sums (`ref_sums`, row i for sequence i) of exactly those rows."""
    rows = [c for c, _ in pairs] + [r for _, r in pairs]
    distinct = list(dict.fromkeys(rows))
    position = {seq: i for i, seq in enumerate(distinct)}
    collate = collate_shared_prefix if share_prefixes else collate_segmented
    batch = collate([data.sequences[i] for i in distinct], pad_id)
    batch["rows"] = torch.tensor([position[r] for r in rows], dtype=torch.long)
    batch["ref_sums"] = ref_sums[rows]
    return batch


class LengthGroupedBatches(Sampler[list[int]]):
    """Batches of examples of similar length, in random order: each epoch shuffles the examples,
    sorts each window of `LENGTH_WINDOW` batches by length, cuts it into batches and shuffles the
    batches. Every example is seen once an epoch, as with plain shuffling, with little padding."""

    def __init__(self, lengths: list[int], batch_size: int, seed: int):
        self.lengths, self.batch_size, self.seed, self.epoch = lengths, batch_size, seed, 0

    def __len__(self) -> int:
        return math.ceil(len(self.lengths) / self.batch_size)

    def __iter__(self) -> Iterator[list[int]]:
        generator = torch.Generator().manual_seed(self.seed + self.epoch)
        self.epoch += 1
        order = torch.randperm(len(self.lengths), generator=generator).tolist()
        span, batches = self.batch_size * LENGTH_WINDOW, []
        for start in range(0, len(order), span):
            window = sorted(order[start : start + span], key=lambda i: -self.lengths[i])
            batches += [window[i : i + self.batch_size] for i in range(0, len(window), self.batch_size)]
        yield from (batches[i] for i in torch.randperm(len(batches), generator=generator).tolist())


def micro_batches(items: list, processes: int, rank: int, accumulation: int) -> list[list]:
    """Process `rank`'s share of one optimiser step's `items`: consecutive runs of them, one per
    forward pass. The step is cut into processes x accumulation runs of nearly equal size, run k
    going to process k // accumulation, so that the same items make the same runs on one process
    accumulating or on several. Every process gets as many runs, none empty: a short last batch of
    an epoch gets fewer runs per process, and one with fewer items than processes gets none."""
    per_process = min(accumulation, len(items) // processes)
    runs = processes * per_process
    if not runs:
        return []
    size, extra = divmod(len(items), runs)
    starts = [k * size + min(k, extra) for k in range(runs + 1)]
    return [items[starts[k] : starts[k + 1]] for k in range(rank * per_process, (rank + 1) * per_process)]
