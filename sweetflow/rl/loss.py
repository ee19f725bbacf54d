"""One preference loss for the SWEET-RL critic, the SWEET-RL policy and the MT-DPO baseline.

All three are Bradley–Terry over sums of per-segment log-ratios:

    A_k   = Σ_{tok ∈ segment k} [log π(tok) − log π_ref(tok)]   (÷ |segment k| when length_normalize)
    s     = Σ_k A_k                                              (one score per sequence)
    loss  = −log σ(β (s⁺ − s⁻))  +  nll_coef · NLL(chosen)

NLL(chosen) covers the chosen responses and is averaged over their tokens (TRL's `sft` term), or,
as the official SWEET-RL actor computes it, every token of each chosen sequence — the dialogue so
far and the response — averaged per sequence and then over sequences (`nll_span="dialogue"`,
`nll_mean="sequence"`). For the dialogue span the data carries one extra segment, the last, holding
every token outside the responses (`PairData.with_context_segment`); it enters the NLL only.

What a segment is decides which method this is (`sweetflow.rl.sequences`):
- critic: one segment per agent turn of a trajectory, `c` in the prompt, length_normalize=True —
  the paper's A(o_t, a_t, c) summed over turns. (The official code instead divides the trajectory's
  total by all its agent tokens: one segment spanning every turn, scoring "all".)
- policy: one segment, the action a_t after the prompt o_t; length_normalize=False, nll_coef>0.
- MT-DPO: the policy's view of a whole trajectory; every agent turn in one segment.

Inputs are [2P, K] per-segment sums and token counts (`sweetflow.rl.logprobs.segment_logps`),
rows [0, P) chosen and [P, 2P) rejected (`sweetflow.rl.batching`).

A training step, with the reference computed once beforehand:

    ref = reference_segment_logps(ref_model, sequences, batch_size, pad_id)      # once, frozen model
    ...
    batch = collate_segmented([sequences[i] for i in rows], pad_id)             # rows = chosen + rejected
    sums, counts = segment_logps(model, batch, ref.num_segments)
    out = PreferenceLoss(beta, length_normalize, nll_coef)(sums, ref.sums[rows], counts)
    out.loss.backward(); log(out.metrics())
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn


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


NllMean = Literal["token", "sequence"]
NllSpan = Literal["response", "dialogue"]


def nll_loss(chosen_sums: torch.Tensor, chosen_counts: torch.Tensor, mean: NllMean = "token") -> torch.Tensor:
    """Negative log-likelihood of the chosen sequences' covered tokens ([P, K] sums and counts): keeps
    the chosen side likely while the preference term pushes the pair apart. 'token': the mean over
    every covered token of the batch, so long sequences weigh more (TRL's `sft` term); 'sequence':
    each sequence's own mean, then the mean over sequences (the official SWEET-RL actor)."""
    sums, counts = chosen_sums.sum(dim=1), chosen_counts.sum(dim=1)
    if mean == "token":
        return -sums.sum() / counts.sum().clamp(min=1)
    return (-sums / counts.clamp(min=1)).mean()


@dataclass
class PreferenceOutput:
    loss: torch.Tensor  # what to backpropagate: preference_loss + nll_coef · nll
    preference_loss: torch.Tensor  # mean Bradley–Terry loss over the pairs
    nll: torch.Tensor
    chosen_rewards: torch.Tensor  # [P] β·s⁺, detached
    rejected_rewards: torch.Tensor  # [P] β·s⁻, detached

    def metrics(self) -> dict[str, float]:
        """The logged quantities (TRL's names). Accuracy: share of pairs whose reward β·s⁺ > β·s⁻ (ties, in
        the rewards' precision, count as wrong)."""
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
    rows [P, 2P) rejected; with nll_span="dialogue" column K − 1 is the context segment. Paper
    values: β = 0.1; critic length_normalize=True, nll_coef=0; policy length_normalize=False, nll_coef=0.01.
    """

    def __init__(
        self,
        beta: float,
        length_normalize: bool,
        nll_coef: float = 0.0,
        nll_span: NllSpan = "response",
        nll_mean: NllMean = "token",
    ):
        super().__init__()
        self.beta, self.length_normalize, self.nll_coef = beta, length_normalize, nll_coef
        self.nll_span, self.nll_mean = nll_span, nll_mean

    def forward(self, policy_sums: torch.Tensor, ref_sums: torch.Tensor, counts: torch.Tensor) -> PreferenceOutput:
        if policy_sums.shape[0] % 2:
            raise ValueError(f"a batch holds chosen then rejected rows: got an odd count, {policy_sums.shape[0]}")
        responses = slice(None, -1) if self.nll_span == "dialogue" else slice(None)
        if policy_sums[:, responses].shape[1] == 0:
            raise ValueError(
                "nll_span 'dialogue' needs a context segment after the responses (PairData.with_context_segment)"
            )
        pairs = policy_sums.shape[0] // 2
        chosen, rejected = slice(None, pairs), slice(pairs, None)  # the two halves of the rows
        segments = segment_scores(
            policy_sums[:, responses], ref_sums[:, responses], counts[:, responses], self.length_normalize
        )
        scores = segments.sum(dim=1)  # s, one per sequence
        chosen_scores, rejected_scores = scores[chosen], scores[rejected]
        preference = bradley_terry_loss(chosen_scores, rejected_scores, self.beta).mean()
        nll = nll_loss(policy_sums[chosen], counts[chosen], self.nll_mean)
        return PreferenceOutput(
            loss=preference + self.nll_coef * nll,
            preference_loss=preference,
            nll=nll,
            chosen_rewards=self.beta * chosen_scores.detach(),
            rejected_rewards=self.beta * rejected_scores.detach(),
        )
