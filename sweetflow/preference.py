"""One preference loss for the SWEET-RL critic, the SWEET-RL policy and the MT-DPO baseline (DESIGN.md §2).

All three are Bradley–Terry over sums of per-segment log-ratios:

    A_k   = Σ_{tok ∈ segment k} [log π(tok) − log π_ref(tok)]   (÷ |segment k| when length_normalize)
    s     = Σ_k A_k                                              (one score per sequence)
    loss  = −log σ(β (s⁺ − s⁻))  +  nll_coef · NLL(chosen)

What a segment is decides which method this is:
- critic (step 3): one segment per agent turn of a trajectory, `c` in the prompt, length_normalize=True —
  the paper's A(o_t, a_t, c) summed over turns. (The official code instead divides the trajectory's
  total by all its agent tokens: that is one segment spanning every turn; `turn_segment_ids(mask,
  per_turn=False)` builds it.)
- policy (step 7): one segment, the action a_t after the prompt o_t; length_normalize=False, nll_coef>0.
- MT-DPO: the policy's view of a whole trajectory; every agent turn in one segment (or one per turn:
  without normalisation the sum is the same).

Data layout: a batch holds 2P sequences, rows [0, P) the chosen ones and [P, 2P) the rejected ones in
the same pair order (TRL's and OpenRLHF's convention: one forward pass for both sides). Tokens are
labelled by `segment_ids` aligned with `input_ids`: k ≥ 0 for a token of the sequence's k-th segment,
`NOT_SCORED` (−1) for prompt, human, critic-prefix and padding tokens.

The training loop's step, with the reference computed once beforehand:

    ref = reference_segment_logps(ref_model, sequences, batch_size, pad_id)      # once, frozen model
    ...
    batch = collate_segmented([sequences[i] for i in rows], pad_id)             # rows = chosen + rejected
    sums, counts = segment_logps(model, batch, ref.num_segments)
    out = PreferenceLoss(beta, length_normalize, nll_coef)(sums, ref.sums[rows], counts)
    out.loss.backward(); log(out.metrics())
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

NOT_SCORED = -1  # segment id of every token that is not part of a scored response


# --- token log-probs --------------------------------------------------------------------------------


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


# --- segments ---------------------------------------------------------------------------------------


def turn_segment_ids(response_mask: torch.Tensor, per_turn: bool = True) -> torch.Tensor:
    """Segment ids from a response mask (e.g. a chat template's assistant mask): each contiguous run of
    response tokens is one agent turn, numbered 0, 1, … within its sequence; other tokens NOT_SCORED.
    With per_turn=False every run is segment 0: one segment per sequence (whole-response scoring)."""
    mask = response_mask.bool()
    starts = mask & ~F.pad(mask[:, :-1], (1, 0), value=False)  # a response token after a non-response one
    ids = starts.long().cumsum(dim=1) - 1 if per_turn else torch.zeros_like(mask, dtype=torch.long)
    return torch.where(mask, ids, NOT_SCORED)


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
        input_ids=prefix_ids, attention_mask=prefix_mask, position_ids=_positions(prefix_mask),
        use_cache=True, logits_to_keep=keep,
    )  # fmt: skip
    if out.past_key_values is None:
        raise ValueError("the model returned no cache (gradient checkpointing?): collate with collate_segmented")
    first_logits = out.logits[torch.arange(len(last), device=last.device), torch.searchsorted(keep, last)][group]
    cache = out.past_key_values
    cache.batch_select_indices(group)  # one copy of its prefix's keys and values per row
    suffix_ids, suffix_mask, segment_ids = batch["input_ids"], batch["attention_mask"], batch["segment_ids"]
    attention = torch.cat([prefix_mask[group], suffix_mask], dim=1)
    positions = prefix_len[group, None] + torch.arange(suffix_ids.shape[1], device=suffix_ids.device)
    scored = segment_ids >= 0
    # Suffix token 0 is predicted by its prefix's last logits; token t > 0 by the suffix's logits at t − 1.
    first = _label_logprob(first_logits.float(), suffix_ids[:, 0])
    rest = forward_logprobs(
        model, suffix_ids, torch.cat([torch.zeros_like(scored[:, :1]), scored[:, 1:]], dim=1),
        attention_mask=attention, position_ids=positions, past_key_values=cache,
    )  # fmt: skip
    token_logps = torch.cat([torch.where(scored[:, 0], first, 0.0)[:, None], rest[:, 1:]], dim=1)
    return segment_logp_sums(token_logps, segment_ids, num_segments)


def _positions(mask: torch.Tensor) -> torch.Tensor:
    return (mask.cumsum(dim=1) - 1).clamp(min=0)


# --- the loss ---------------------------------------------------------------------------------------


def segment_scores(
    policy_sums: torch.Tensor, ref_sums: torch.Tensor, counts: torch.Tensor, length_normalize: bool
) -> torch.Tensor:
    """A_k = Σ_tokens (log π − log π_ref) over segment k, divided by its own length when length_normalize
    (the paper's A(o_t, a_t, c): without it long turns dominate and the paper's actor collapsed).
    Empty segments score 0. Also the critic's ranking of candidates (step 5): one segment per candidate."""
    ratio = policy_sums - ref_sums
    return ratio / counts.clamp(min=1) if length_normalize else ratio


def bradley_terry_loss(chosen_scores: torch.Tensor, rejected_scores: torch.Tensor, beta: float) -> torch.Tensor:
    """Per pair: −log σ(β (s⁺ − s⁻)) — DPO's sigmoid loss; log 2 when the two scores are equal."""
    return -F.logsigmoid(beta * (chosen_scores - rejected_scores))


def nll_loss(chosen_sums: torch.Tensor, chosen_counts: torch.Tensor) -> torch.Tensor:
    """Mean negative log-likelihood over all chosen response tokens of the batch (token-weighted, as
    TRL's `sft` loss term): keeps the chosen responses likely while DPO pushes the pair apart."""
    return -chosen_sums.sum() / chosen_counts.sum().clamp(min=1)


@dataclass
class PreferenceOutput:
    loss: torch.Tensor  # what to backpropagate: preference_loss + nll_coef · nll
    preference_loss: torch.Tensor  # mean Bradley–Terry loss over the pairs
    nll: torch.Tensor
    chosen_rewards: torch.Tensor  # [P] β·s⁺, detached
    rejected_rewards: torch.Tensor  # [P] β·s⁻, detached

    def metrics(self) -> dict[str, float]:
        """The logged quantities (TRL's names). Accuracy: share of pairs with s⁺ > s⁻ (ties count as wrong)."""
        return {
            "loss": self.loss.item(),
            "preference_loss": self.preference_loss.item(),
            "nll": self.nll.item(),
            "rewards/chosen": self.chosen_rewards.mean().item(),
            "rewards/rejected": self.rejected_rewards.mean().item(),
            "rewards/accuracies": (self.chosen_rewards > self.rejected_rewards).float().mean().item(),
            "rewards/margins": (self.chosen_rewards - self.rejected_rewards).mean().item(),
        }


class PreferenceLoss(nn.Module):
    """Bradley–Terry on per-sequence sums of segment log-ratios, plus an NLL term on the chosen side.

    forward(policy_sums, ref_sums, counts), each [2P, K] from `segment_logp_sums`: rows [0, P) chosen,
    rows [P, 2P) rejected. Paper values: β = 0.1; critic length_normalize=True, nll_coef=0; policy
    length_normalize=False, nll_coef=0.01.
    """

    def __init__(self, beta: float, length_normalize: bool, nll_coef: float = 0.0):
        super().__init__()
        self.beta, self.length_normalize, self.nll_coef = beta, length_normalize, nll_coef

    def forward(self, policy_sums: torch.Tensor, ref_sums: torch.Tensor, counts: torch.Tensor) -> PreferenceOutput:
        if policy_sums.shape[0] % 2:
            raise ValueError(f"a batch holds chosen then rejected rows: got an odd count, {policy_sums.shape[0]}")
        scores = segment_scores(policy_sums, ref_sums, counts, self.length_normalize).sum(dim=1)
        chosen, rejected = scores.chunk(2)
        preference = bradley_terry_loss(chosen, rejected, self.beta).mean()
        pairs = chosen.shape[0]
        nll = nll_loss(policy_sums[:pairs], counts[:pairs])
        return PreferenceOutput(
            loss=preference + self.nll_coef * nll,
            preference_loss=preference,
            nll=nll,
            chosen_rewards=self.beta * chosen.detach(),
            rejected_rewards=self.beta * rejected.detach(),
        )


# --- data and the reference cache -------------------------------------------------------------------


@dataclass
class SegmentedSequence:
    """One tokenised sequence and the segment of each token (NOT_SCORED outside responses)."""

    input_ids: list[int]
    segment_ids: list[int]


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
    model: nn.Module, sequences: Sequence[SegmentedSequence], batch_size: int, pad_id: int
) -> SegmentLogps:
    """Run the frozen reference model once over a dataset and keep only what the loss needs from it:
    per-segment log-prob sums (and counts), [N, K], in dataset order. The training loop indexes these
    rows (`ref.sums[rows]`) instead of running the reference every step: one forward pass fewer per
    step, every epoch, and no reference model in memory while training. Pass `ref.num_segments` to
    `segment_logps` so the policy's [B, K] lines up with the cached rows. The tensors stay on the
    model's device; `torch.save` them next to the dataset to reuse them across runs."""
    num_segments = max(max(s.segment_ids, default=NOT_SCORED) for s in sequences) + 1
    if num_segments == 0:
        raise ValueError("no sequence has a scored token: nothing to compare")
    was_training = model.training
    model.eval()
    sums, counts = [], []
    for start in range(0, len(sequences), batch_size):
        batch = collate_shared_prefix(sequences[start : start + batch_size], pad_id)
        s, c = segment_logps(model, batch, num_segments)
        sums.append(s)
        counts.append(c)
    model.train(was_training)
    return SegmentLogps(torch.cat(sums), torch.cat(counts))
