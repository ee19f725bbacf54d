"""Training with the preference loss (`sweetflow.rl.loss`) on the shared loop: the SWEET-RL critic,
MT-DPO and the SWEET-RL policy differ only in their sequences, segments and loss options.

A dataset is a list of tokenised sequences and a list of (chosen, rejected) index pairs into it
(`PairData`); a sequence may be in many pairs (a trajectory against several worse ones). The
reference model's per-segment log-probs are computed once, before training
(`reference_segment_logps`), and indexed by the batch: no reference model is held or run during
training.
"""

from __future__ import annotations

from dataclasses import dataclass

from accelerate import Accelerator

from sweetflow.rl.batching import batch_tokens, collate_pairs
from sweetflow.rl.logprobs import SegmentLogps, segment_logps
from sweetflow.rl.loop import (
    Fitted,
    Objective,
    StepResult,
    TrainRun,
    batch_layout,
    fit,
    forward_batch_size,
    process_count,
)
from sweetflow.rl.loss import PreferenceLoss
from sweetflow.rl.sequences import PairData


@dataclass(frozen=True)
class ScoredPairs:
    """Preference pairs and the reference model's log-probs of their sequences (row i: sequence i)."""

    data: PairData
    ref: SegmentLogps


def preference_step(model, batch: dict, loss: PreferenceLoss, num_segments: int) -> StepResult:
    sums, counts = segment_logps(model, batch, num_segments)
    rows = batch["rows"]
    out = loss(sums[rows], batch["ref_sums"].to(sums.device), counts[rows])
    return StepResult(out.loss, batch_tokens(batch), out.metrics())


class PreferenceObjective(Objective):
    """The preference loss on `train`'s pairs, a step's pairs in whole groups (what they share is read
    once); with `holdout`, `eval/*` are the loss's metrics on its pairs (TRL's names: rewards/accuracies,
    rewards/margins, ...)."""

    def __init__(
        self, train: ScoredPairs, holdout: ScoredPairs | None, loss: PreferenceLoss, run: TrainRun, pad_id: int
    ):
        p, engine = run.trainer, run.engine
        layout = batch_layout(p.batch_size, engine.micro_batch_size, process_count(), run.name)
        self.items, self.per_step = train.data.batches_of(p.batch_size, layout.micro)
        # An item's padded width: its longest sequence.
        sequences = train.data.sequences
        self.lengths = [max(len(sequences[i].input_ids) for pair in item for i in pair) for item in self.items]
        self.train, self.holdout, self.preference_loss, self.pad_id = train, holdout, loss, pad_id
        self.share_prefixes = not engine.gradient_checkpointing
        self.forward_batch = forward_batch_size(p, engine)

    def collate(self, items: list[list[tuple[int, int]]]) -> dict:
        pairs = [pair for item in items for pair in item]
        return collate_pairs(pairs, self.train.data, self.train.ref.sums, self.pad_id, self.share_prefixes)

    def loss(self, model, batch: dict) -> StepResult:
        return preference_step(model, batch, self.preference_loss, self.train.ref.num_segments)

    def weight(self, batch: dict) -> int:
        """The pairs, what the preference loss is a mean over (its NLL term aside)."""
        return len(batch["rows"]) // 2

    def evaluate(self, model, accelerator: Accelerator) -> dict[str, float]:
        if self.holdout is None or not self.holdout.data.pairs:
            return {}
        held, totals = self.holdout, {}
        for start in range(0, len(held.data.pairs), self.forward_batch):
            chunk = held.data.pairs[start : start + self.forward_batch]
            batch = collate_pairs(chunk, held.data, held.ref.sums, self.pad_id, self.share_prefixes)
            batch = {key: value.to(accelerator.device) for key, value in batch.items()}
            metrics = preference_step(model, batch, self.preference_loss, held.ref.num_segments).metrics
            for key, value in metrics.items():
                totals[key] = totals.get(key, 0.0) + value * len(chunk)
        return {key: round(value / len(held.data.pairs), 5) for key, value in totals.items()}


def train_preference(
    model, train: ScoredPairs, loss: PreferenceLoss, *, run: TrainRun, pad_id: int, holdout: ScoredPairs | None = None
) -> Fitted:
    """Train `model` on `train`'s pairs for `run.trainer.epochs` epochs; see `fit` for what is returned."""
    if not train.data.pairs:
        raise ValueError(f"{run.name}: no preference pairs to train on")
    return fit(model, PreferenceObjective(train, holdout, loss, run, pad_id), run)
