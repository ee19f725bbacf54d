"""Training with the preference loss (sweetflow.preference) on the shared loop: the SWEET-RL
critic, MT-DPO and the SWEET-RL policy differ only in their sequences, segments and loss options.

A dataset is a list of tokenised sequences and a list of (chosen, rejected) index pairs into it; a
sequence may be in many pairs (a trajectory against several worse ones). The reference model's
per-segment log-probs are computed once, before training (`reference_segment_logps`), and indexed
by the batch: no reference model is held or run during training.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path

import torch
from accelerate import Accelerator

from sweetflow.models.training import StepResult, fit
from sweetflow.params import TrainerParams
from sweetflow.preference import (
    PreferenceLoss,
    SegmentedSequence,
    SegmentLogps,
    batch_tokens,
    collate_segmented,
    collate_shared_prefix,
    reference_segment_logps,
    segment_logps,
    segment_scores,
)


@dataclass
class PairData:
    sequences: list[SegmentedSequence]
    pairs: list[tuple[int, int]]  # (chosen, rejected) indices into `sequences`
    # Pairs that share sequences or a prefix (the pairs of one state, of one task), as lists of
    # indices into `pairs`: training batches hold whole groups, so that what they share is read once.
    groups: list[list[int]] | None = None

    def tokens(self) -> int:
        return sum(len(self.sequences[i].input_ids) + len(self.sequences[j].input_ids) for i, j in self.pairs)

    def batches_of(self, batch_size: int) -> tuple[list[list[tuple[int, int]]], int]:
        """(training items, items per batch), an item being a list of pairs: single pairs, or whole
        groups with about `batch_size` pairs per batch."""
        if not self.groups:
            return [[pair] for pair in self.pairs], batch_size
        items = [[self.pairs[i] for i in group] for group in self.groups]
        per_group = len(self.pairs) / len(items)
        return items, max(1, round(batch_size / per_group))


def group_pairs(keys: list[str]) -> list[list[int]]:
    """Indices of equal keys, grouped, in order of first appearance."""
    groups: dict[str, list[int]] = {}
    for i, key in enumerate(keys):
        groups.setdefault(key, []).append(i)
    return list(groups.values())


def collate_pairs(
    pairs: list[tuple[int, int]], data: PairData, ref: SegmentLogps, pad_id: int, share_prefixes: bool = True
) -> dict:
    """The batch's distinct sequences, each read once (with shared prefixes read once too, unless
    `share_prefixes` is off: gradient checkpointing keeps no cache), and `rows`, which lays their
    scores out as PreferenceLoss wants them — chosen rows first, then rejected rows in the same
    order — next to the cached reference sums of exactly those rows."""
    rows = [c for c, _ in pairs] + [r for _, r in pairs]
    distinct = list(dict.fromkeys(rows))
    position = {seq: i for i, seq in enumerate(distinct)}
    collate = collate_shared_prefix if share_prefixes else collate_segmented
    batch = collate([data.sequences[i] for i in distinct], pad_id)
    batch["rows"] = torch.tensor([position[r] for r in rows], dtype=torch.long)
    batch["ref_sums"] = ref.sums[rows]
    return batch


def preference_step(model, batch: dict, loss: PreferenceLoss, num_segments: int) -> StepResult:
    sums, counts = segment_logps(model, batch, num_segments)
    rows = batch["rows"]
    out = loss(sums[rows], batch["ref_sums"].to(sums.device), counts[rows])
    return StepResult(out.loss, batch_tokens(batch), out.metrics())


def train_preference(
    model,
    data: PairData,
    ref: SegmentLogps,
    loss: PreferenceLoss,
    p: TrainerParams,
    pad_id: int,
    log_dir: Path | str,
    name: str,
    holdout: tuple[PairData, SegmentLogps] | None = None,
) -> tuple[object | None, dict | None, dict]:
    """Train `model` on `data.pairs` for `p.epochs` epochs; `ref` holds the reference log-probs of
    `data.sequences` (row i for sequence i). With `holdout`, `eval/*` are the loss's metrics on those
    pairs (TRL's names: rewards/accuracies, rewards/margins, ...). See `fit` for what is returned."""
    if not data.pairs:
        raise ValueError(f"{name}: no preference pairs to train on")
    k = ref.num_segments
    share = not p.gradient_checkpointing
    items, per_batch = data.batches_of(p.batch_size)

    def collate_fn(batch: list[list[tuple[int, int]]]) -> dict:
        return collate_pairs([pair for item in batch for pair in item], data, ref, pad_id, share)

    step = partial(preference_step, loss=loss, num_segments=k)

    def evaluate(model, accelerator: Accelerator) -> dict[str, float]:
        held, held_ref = holdout
        totals: dict[str, float] = {}
        for start in range(0, len(held.pairs), p.batch_size):
            chunk = held.pairs[start : start + p.batch_size]
            batch = collate_pairs(chunk, held, held_ref, pad_id, share)
            batch = {key: value.to(accelerator.device) for key, value in batch.items()}
            metrics = preference_step(model, batch, loss, held_ref.num_segments).metrics
            for key, value in metrics.items():
                totals[key] = totals.get(key, 0.0) + value * len(chunk)
        return {key: round(value / len(held.pairs), 5) for key, value in totals.items()}

    with_eval = evaluate if holdout and holdout[0].pairs else None
    # An item's padded width: its longest sequence.
    lengths = [max(len(data.sequences[i].input_ids) for pair in item for i in pair) for item in items]
    per_batch_p = p.model_copy(update={"batch_size": per_batch})
    return fit(model, items, collate_fn, step, per_batch_p, log_dir, name, with_eval, lengths)


@torch.no_grad()
def segment_advantages(
    model, ref: SegmentLogps, sequences: list[SegmentedSequence], batch_size: int, pad_id: int
) -> torch.Tensor:
    """The critic's length-normalised log-ratio of each sequence's segment 0 against `ref` (one
    action per sequence: the candidates of step 5): [N], float32."""
    mine = reference_segment_logps(model, sequences, batch_size, pad_id)
    return segment_scores(mine.sums[:, :1], ref.sums[:, :1], mine.counts[:, :1], length_normalize=True)[:, 0]
