"""How far a trained model has moved from its reference as a language model: the mean per-token
KL divergence KL(π ‖ π_ref) over the scored tokens of some sequences.

A SWEET-RL critic is a language model whose log-ratio to its reference is the advantage. A learning
rate that trains the ratio by wrecking the model (the official critic trains at 2e-7) leaves
log-probs that no longer describe actions, and the ranking then reads noise. The held-out NLL says
how unlikely the data became; the KL says how far the whole next-token distribution moved.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from sweetflow.rl.batching import collate_segmented
from sweetflow.rl.logprobs import predicting
from sweetflow.rl.sequences import SegmentedSequence


@torch.no_grad()
def mean_token_kl(
    model: nn.Module,
    reference: nn.Module,
    sequences: Sequence[SegmentedSequence],
    batch_size: int,
    pad_id: int,
    segments: int | None = None,
    chunk_rows: int = 256,
) -> float:
    """Σ_v π(v) (log π(v) − log π_ref(v)) at each position that predicts a scored token, averaged over
    those tokens; only segments [0, `segments`) count when it is given (e.g. the agent turns, not the
    context segment of a dialogue NLL). Both models see the same batch; each reads the logits of
    those positions only, `chunk_rows` rows of the vocabulary at a time."""
    device = next(model.parameters()).device
    total, tokens = 0.0, 0
    for start in range(0, len(sequences), batch_size):
        batch = collate_segmented(sequences[start : start + batch_size], pad_id)
        segment_ids = batch["segment_ids"]
        scored = segment_ids >= 0 if segments is None else (segment_ids >= 0) & (segment_ids < segments)
        if not scored.any():
            continue
        inputs = {
            "input_ids": batch["input_ids"].to(device),
            "attention_mask": batch["attention_mask"].to(device),
            "logits_to_keep": predicting(scored).to(device),
        }
        mine, theirs = model(**inputs).logits, reference(**inputs).logits.to(device)
        for i in range(0, mine.shape[0], chunk_rows):
            log_p = mine[i : i + chunk_rows].float().log_softmax(-1)
            log_q = theirs[i : i + chunk_rows].float().log_softmax(-1)
            total += float((log_p.exp() * (log_p - log_q)).sum())
        tokens += int(scored.sum())
    if not tokens:
        raise ValueError("no scored token: nothing to measure the drift on")
    return total / tokens
