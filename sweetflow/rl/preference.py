"""Training with the preference loss (`sweetflow.rl.loss`) on the shared loop: the SWEET-RL critic,
MT-DPO and the SWEET-RL policy differ only in their sequences, segments and loss options.

A dataset is a list of tokenised sequences and a list of (chosen, rejected) index pairs into it
(`PairData`); a sequence may be in many pairs (a trajectory against several worse ones). The
reference model's per-segment log-probs are computed once, before training
(`reference_segment_logps`), and indexed by the batch: no reference model is held or run during
training.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from accelerate import Accelerator

from sweetflow.params import TrainerParams, TrainingParams
from sweetflow.rl.batching import batch_tokens, collate_pairs
from sweetflow.rl.logprobs import SegmentLogps, segment_logps
from sweetflow.rl.loop import Fitted, StepResult, batch_layout, fit, forward_batch_size, process_count
from sweetflow.rl.loss import PreferenceLoss
from sweetflow.rl.sequences import PairData


def preference_step(model, batch: dict, loss: PreferenceLoss, num_segments: int) -> StepResult:
    sums, counts = segment_logps(model, batch, num_segments)
    rows = batch["rows"]
    out = loss(sums[rows], batch["ref_sums"].to(sums.device), counts[rows])
    return StepResult(out.loss, batch_tokens(batch), out.metrics())


def pairs_in(batch: dict) -> int:
    """What the preference loss is a mean over (its NLL term aside): the micro-batches of a step are weighted by it."""
    return len(batch["rows"]) // 2


def train_preference(
    model,
    data: PairData,
    ref: SegmentLogps,
    loss: PreferenceLoss,
    p: TrainerParams,
    engine: TrainingParams,
    pad_id: int,
    log_dir: Path | str,
    name: str,
    holdout: tuple[PairData, SegmentLogps] | None = None,
) -> Fitted:
    """Train `model` on `data.pairs` for `p.epochs` epochs; `ref` holds the reference log-probs of
    `data.sequences` (row i for sequence i). With `holdout`, `eval/*` are the loss's metrics on those
    pairs (TRL's names: rewards/accuracies, rewards/margins, ...). See `fit` for what is returned."""
    if not data.pairs:
        raise ValueError(f"{name}: no preference pairs to train on")
    k = ref.num_segments
    share = not engine.gradient_checkpointing
    layout = batch_layout(p.batch_size, engine.micro_batch_size, process_count(), name)
    items, per_step = data.batches_of(p.batch_size, layout.micro)  # an optimiser step's pairs, in whole groups
    forward = forward_batch_size(p, engine)

    def collate_fn(batch: list[list[tuple[int, int]]]) -> dict:
        return collate_pairs([pair for item in batch for pair in item], data, ref.sums, pad_id, share)

    step = partial(preference_step, loss=loss, num_segments=k)

    def evaluate(model, accelerator: Accelerator) -> dict[str, float]:
        held, held_ref = holdout
        totals: dict[str, float] = {}
        for start in range(0, len(held.pairs), forward):
            chunk = held.pairs[start : start + forward]
            batch = collate_pairs(chunk, held, held_ref.sums, pad_id, share)
            batch = {key: value.to(accelerator.device) for key, value in batch.items()}
            metrics = preference_step(model, batch, loss, held_ref.num_segments).metrics
            for key, value in metrics.items():
                totals[key] = totals.get(key, 0.0) + value * len(chunk)
        return {key: round(value / len(held.pairs), 5) for key, value in totals.items()}

    with_eval = evaluate if holdout and holdout[0].pairs else None
    # An item's padded width: its longest sequence.
    lengths = [max(len(data.sequences[i].input_ids) for pair in item for i in pair) for item in items]
    return fit(model, items, collate_fn, step, pairs_in, p, engine, log_dir, name, with_eval, lengths, per_step)
