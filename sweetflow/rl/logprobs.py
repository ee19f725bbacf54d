"""Token log-probs of a causal LM, summed per segment (`sweetflow.rl.sequences`).

Everything the losses compare goes through `segment_logps`: the reference cache computed once
before training (`reference_segment_logps`) and every training step, so their masking is the same
by construction (at initialisation every log-ratio is exactly 0). Logits are asked for only at the
positions that predict a scored token: in a dialogue most tokens are prompt, human replies or the
critic's prefix, and for a real model's vocabulary the skipped logits are most of the memory.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from tqdm import tqdm

from sweetflow.core.artifacts import save_every_seconds, temporary_path
from sweetflow.core.requirements import check
from sweetflow.rl.batching import collate_shared_prefix
from sweetflow.rl.sequences import NOT_SCORED, SegmentedSequence

check()  # `out.cache` of a forward pass: transformers 5.24


def predicting(scored: torch.Tensor) -> torch.Tensor:
    """The positions whose logits predict a scored token (t − 1 for token t). Passed to a causal LM as
    `logits_to_keep`, it limits the vocabulary projection to them: in a multi-turn dialogue most
    tokens are prompt, human replies or the critic's prefix, which need no logits at all."""
    if scored[:, 0].any():
        raise ValueError("position 0 of a sequence cannot be scored: no logits predict it")
    return F.pad(scored[:, 1:], (0, 1), value=False)


def token_logprobs(
    rows: torch.Tensor, input_ids: torch.Tensor, scored: torch.Tensor, chunk_rows: int = 1024
) -> torch.Tensor:
    """log π(input_ids[b, t] | input_ids[b, :t]) at every scored position, 0 elsewhere; shape [B, T].

    `rows` [N, V] are the logits at the positions `predicting(scored)` marks, in row-major order (what
    the model returns for that `logits_to_keep`). The result is aligned with `input_ids`, so one mask
    serves ids, log-probs and segments alike.

    Memory: `log_softmax(-1).gather(...)` would materialise a second [N, V] tensor (V = 128k for
    Llama-3) to read one number per row. Each row is reduced as `logit[label] − logsumexp(logits)`
    in float32, `chunk_rows` rows at a time, so the temporaries of the reduction (and of its
    backward) are chunk_rows × V.
    """
    labels = input_ids[scored]
    if rows.shape[0] != labels.shape[0]:
        raise ValueError(f"{rows.shape[0]} rows of logits for {labels.shape[0]} scored tokens")
    picked = [
        _label_logprob(rows[i : i + chunk_rows].float(), labels[i : i + chunk_rows])
        for i in range(0, rows.shape[0], chunk_rows)
    ]
    values = torch.cat(picked) if picked else rows.new_zeros(0, dtype=torch.float32)
    return torch.zeros(input_ids.shape, dtype=torch.float32, device=rows.device).masked_scatter(scored, values)


def forward_logprobs(model: nn.Module, input_ids: torch.Tensor, scored: torch.Tensor, **inputs) -> torch.Tensor:
    """`token_logprobs` of one forward pass of a causal LM (`inputs`: attention mask, cache, positions)."""
    logits = model(input_ids=input_ids, logits_to_keep=predicting(scored), **inputs).logits
    return token_logprobs(logits, input_ids, scored)


def _label_logprob(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """log softmax(logits)[label] = logit[label] − logsumexp(logits), without the full softmax."""
    return logits.gather(-1, labels[:, None]).squeeze(-1) - torch.logsumexp(logits, dim=-1)


def segment_logp_sums(
    token_logps: torch.Tensor, segment_ids: torch.Tensor, num_segments: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per (sequence, segment): the sum of the tokens' log-probs and the token count; both [B, K].
    Tokens marked NOT_SCORED contribute to neither; segments a sequence lacks have sum 0 and count 0."""
    if segment_ids.max() >= num_segments:
        raise ValueError(f"segment id {int(segment_ids.max())} does not fit num_segments={num_segments}")
    scored = segment_ids >= 0
    index = segment_ids.clamp(min=0)  # NOT_SCORED tokens land in segment 0 with weight 0
    sums = token_logps.new_zeros(token_logps.shape[0], num_segments).scatter_add(1, index, token_logps * scored)
    counts = torch.zeros_like(sums, dtype=torch.long).scatter_add(1, index, scored.long())
    return sums, counts


def segment_logps(
    model: nn.Module, batch: dict[str, torch.Tensor], num_segments: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Forward `model` (a causal LM returning `.logits`) on a collated batch; per-segment log-prob
    sums and token counts, [B, K]. The reference cache and the training step both go through here,
    so their masking is the same by construction (at initialisation every log-ratio is exactly 0).

    A batch from `collate_shared_prefix` (it has `prefix_ids`) reads each distinct prefix once; one
    from `collate_segmented` reads every row whole. Both give the same numbers."""
    if "prefix_ids" in batch:
        return _shared_prefix_logps(model, batch, num_segments)
    segment_ids = batch["segment_ids"]
    token_logps = forward_logprobs(model, batch["input_ids"], segment_ids >= 0, attention_mask=batch["attention_mask"])
    return segment_logp_sums(token_logps, segment_ids, num_segments)


def _shared_prefix_logps(
    model: nn.Module, batch: dict[str, torch.Tensor], num_segments: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Two forward passes: the distinct prefixes (right-padded, keeping their key/value cache), then
    every row's suffix on top of its prefix's cache. Gradients flow through the cache into the
    prefix pass, so a training step is exact: a prefix shared by k rows is simply read once."""
    prefix_ids, prefix_mask, group = batch["prefix_ids"], batch["prefix_mask"], batch["group"]
    prefix_len = prefix_mask.sum(dim=1)
    last = prefix_len - 1  # the prefix position whose logits predict the suffix's first token
    keep = torch.unique(last)  # only these positions' logits: a long prefix's [L, V] logits are huge
    out = model(
        input_ids=prefix_ids,
        attention_mask=prefix_mask,
        position_ids=_positions(prefix_mask),
        use_cache=True,
        logits_to_keep=keep,
    )
    if out.cache is None:
        raise ValueError("the model returned no cache (gradient checkpointing?): collate with collate_segmented")
    first_logits = out.logits[torch.arange(len(last), device=last.device), torch.searchsorted(keep, last)][group]
    cache = out.cache
    cache.batch_select_indices(group)  # one copy of its prefix's keys and values per row
    suffix_ids, suffix_mask, segment_ids = batch["input_ids"], batch["attention_mask"], batch["segment_ids"]
    attention = torch.cat([prefix_mask[group], suffix_mask], dim=1)
    positions = prefix_len[group, None] + torch.arange(suffix_ids.shape[1], device=suffix_ids.device)
    scored = segment_ids >= 0
    # Suffix token 0 is predicted by its prefix's last logits; token t > 0 by the suffix's logits at t − 1.
    first = _label_logprob(first_logits.float(), suffix_ids[:, 0])
    rest = forward_logprobs(
        model,
        suffix_ids,
        torch.cat([torch.zeros_like(scored[:, :1]), scored[:, 1:]], dim=1),
        attention_mask=attention,
        position_ids=positions,
        cache=cache,
    )
    token_logps = torch.cat([torch.where(scored[:, 0], first, 0.0)[:, None], rest[:, 1:]], dim=1)
    return segment_logp_sums(token_logps, segment_ids, num_segments)


def _positions(mask: torch.Tensor) -> torch.Tensor:
    return (mask.cumsum(dim=1) - 1).clamp(min=0)


@dataclass
class SegmentLogps:
    """Per-segment log-prob sums and token counts of a dataset under one model, [N, K], row i for
    sequence i. K = the largest number of segments in any sequence; missing segments are 0 / 0."""

    sums: torch.Tensor  # float32
    counts: torch.Tensor  # int64

    @property
    def num_segments(self) -> int:
        return self.sums.shape[1]


@torch.no_grad()
def reference_segment_logps(
    model: nn.Module,
    sequences: Sequence[SegmentedSequence],
    batch_size: int,
    pad_id: int,
    desc: str | None = None,
    done: SegmentLogps | None = None,
    keep: Callable[[SegmentLogps], None] | None = None,
    keep_every_s: float = 0.0,
) -> SegmentLogps:
    """Run the frozen reference model once over a dataset and keep only what the loss needs from it:
    per-segment log-prob sums (and counts), [N, K], in dataset order. The training loop indexes these
    rows (`ref.sums[rows]`) instead of running the reference every step: one forward pass fewer per
    step, every epoch, and no reference model in memory while training. Pass `ref.num_segments` to
    `segment_logps` so the policy's [B, K] lines up with the cached rows. Each batch is moved to the
    model's device (a GPU, when the model is on one); the results come back to the CPU, where the
    training batches that index them are collated. `torch.save` them next to the dataset to reuse
    them across runs. `desc` names the progress bar (None: no bar).

    Resumable: `keep`, when given, is handed the rows computed so far after a batch, at most every
    `keep_every_s` seconds; `done`, rows an interrupted pass kept, is where this pass starts again (its
    batches are then the uninterrupted pass's, so the result is the same)."""
    num_segments = max(max(s.segment_ids, default=NOT_SCORED) for s in sequences) + 1
    if num_segments == 0:
        raise ValueError("no sequence has a scored token: nothing to compare")
    # The rows come back to the CPU, where the training batches that index them are collated.
    sums, counts = (
        [torch.zeros(0, num_segments, device="cpu")],
        [torch.zeros(0, num_segments, dtype=torch.int64, device="cpu")],
    )
    if done is not None:
        whole_batches = len(done.sums) % batch_size == 0 or len(done.sums) == len(sequences)
        if done.num_segments != num_segments or len(done.sums) > len(sequences) or not whole_batches:
            raise ValueError(
                f"{len(done.sums)} kept rows of {done.num_segments} segments: not a start of this pass "
                f"({len(sequences)} sequences of {num_segments} segments, {batch_size} a batch)"
            )
        sums, counts = [done.sums], [done.counts]
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    first, kept = len(sums[0]), time.monotonic()
    with tqdm(total=len(sequences), initial=first, desc=desc, unit="sequence", disable=desc is None) as bar:
        for start in range(first, len(sequences), batch_size):
            batch = collate_shared_prefix(sequences[start : start + batch_size], pad_id)
            s, c = segment_logps(model, {key: value.to(device) for key, value in batch.items()}, num_segments)
            sums.append(s.cpu())
            counts.append(c.cpu())
            bar.update(s.shape[0])
            if keep is not None and time.monotonic() - kept >= keep_every_s:
                sums, counts = [torch.cat(sums)], [torch.cat(counts)]
                keep(SegmentLogps(sums[0], counts[0]))
                kept = time.monotonic()
    model.train(was_training)
    return SegmentLogps(torch.cat(sums), torch.cat(counts))


def kept_segment_logps(
    model: nn.Module,
    sequences: Sequence[SegmentedSequence],
    batch_size: int,
    pad_id: int,
    path: Path | None,
    desc: str,
) -> SegmentLogps:
    """`reference_segment_logps`, kept at `path` for a rerun of the same work (None: kept nowhere): read
    from there when a run cut off later finished it; else computed, from the rows a run cut off inside it
    kept (`<path>.partial`, saved every `SWEETFLOW_SAVE_EVERY_S` seconds, as a training's state: on a real
    model on a CPU one pass can take an hour)."""
    if path is None:
        return reference_segment_logps(model, sequences, batch_size, pad_id, desc=desc)
    path = Path(path)
    if path.is_file():
        print(f"{desc}: read from {path}, as an interrupted run computed them", file=sys.stderr)
        return _load(path)
    partial = path.with_name(f"{path.name}.partial")
    done = _load(partial) if partial.is_file() else None
    if done is not None:
        print(f"{desc}: {len(done.sums)} read from {partial}, as an interrupted run kept them", file=sys.stderr)
    path.parent.mkdir(parents=True, exist_ok=True)
    logps = reference_segment_logps(
        model,
        sequences,
        batch_size,
        pad_id,
        desc=desc,
        done=done,
        keep=lambda rows: save_segment_logps(rows, partial),
        keep_every_s=save_every_seconds(os.environ),
    )
    save_segment_logps(logps, path)
    partial.unlink(missing_ok=True)
    return logps


def save_segment_logps(logps: SegmentLogps, path: Path) -> None:
    """Write `logps` to `path` whole (beside it first, then renamed in)."""
    staging = temporary_path(path)
    torch.save({"sums": logps.sums, "counts": logps.counts}, staging)
    os.replace(staging, path)


def _load(path: Path) -> SegmentLogps:
    kept = torch.load(path)
    return SegmentLogps(kept["sums"], kept["counts"])
