"""The critic's score of a candidate action (SWEET-RL step 5): the advantage its preference loss was
trained on, A(o_t, a_t, c), read for one more action.

The critic learnt a log-ratio against one model, its reference: the base model, or, with warm-up
(`critics.<name>.warmup_epochs`), the base model after that warm-up. A ranking that subtracted any
other model would add a term the Bradley–Terry loss never trained (log π_warm − log π_base), as large
as the spread between a state's candidates. So the critic keeps its reference beside its weights
(`REFERENCE_DIR`) and the ranking reads it there (`score_candidates`: `rank.baseline: reference`, the
paper's). The official code subtracts instead the sampling policy's own mean log-prob of the candidate,
recorded when it was sampled (`sampling_scores`: `rank.baseline: sampling`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl
from torch import nn

from sweetflow.core.errors import InputError
from sweetflow.rl.logprobs import SegmentLogps, kept_segment_logps
from sweetflow.rl.loss import segment_scores
from sweetflow.rl.sequences import SegmentedSequence

REFERENCE_DIR = "reference"  # under a critic's checkpoint: the warmed-up model its loss compared against


def critic_reference(critic_dir: Path | str, base_dir: Path | str) -> Path:
    """The checkpoint the critic at `critic_dir` was trained against: its own warmed-up start when it
    kept one, else the base model it started from."""
    kept = Path(critic_dir) / REFERENCE_DIR
    return kept if (kept / "config.json").is_file() else Path(base_dir)


@dataclass(frozen=True)
class CandidateScores:
    """Per candidate (one scored segment each): the critic's and its reference's mean log-prob, and
    the score, the critic's advantage as its preference loss computes it."""

    critic_mean: list[float]
    reference_mean: list[float]  # the baseline subtracted: the critic's reference, or the sampling policy
    score: list[float]

    def ranked(self, candidates: pl.DataFrame) -> pl.DataFrame:
        """The rank stage's table: each of `candidates` (those scored, in order) with its scores."""
        return candidates.select("state_id", "candidate", "n_tokens").with_columns(
            critic_logp_mean=pl.Series(self.critic_mean, dtype=pl.Float64),
            baseline_logp_mean=pl.Series(self.reference_mean, dtype=pl.Float64),
            score=pl.Series(self.score, dtype=pl.Float64),
        )


def score_candidates(
    critic: nn.Module,
    reference: nn.Module,
    sequences: Sequence[SegmentedSequence],
    batch_size: int,
    pad_id: int,
    length_normalize: bool,
    keep: Path | None = None,
    keep_reference: Path | None = None,
) -> CandidateScores:
    """The critic's advantage of each candidate (its state, then the action as the one scored segment):
    `segment_scores` of the critic's and the reference's log-prob sums, the formula of the loss
    (length-normalised: mean log π_critic − mean log π_ref). The critic's pass is kept in directory `keep`, the
    reference's in `keep_reference` (default `keep`; `candidate_logps`): critics trained from one reference at
    several learning rates then compute its pass once."""
    mine = candidate_logps(critic, "critic", sequences, batch_size, pad_id, keep)
    ref = candidate_logps(reference, "reference", sequences, batch_size, pad_id, keep_reference or keep)
    counts = mine.counts[:, 0].clamp(min=1)
    score = segment_scores(mine.sums[:, 0], ref.sums[:, 0], mine.counts[:, 0], length_normalize)
    return CandidateScores(
        (mine.sums[:, 0] / counts).tolist(), (ref.sums[:, 0] / counts).tolist(), score.double().tolist()
    )


def candidate_logps(
    model: nn.Module,
    role: str,
    sequences: Sequence[SegmentedSequence],
    batch_size: int,
    pad_id: int,
    keep: Path | None = None,
) -> SegmentLogps:
    """The log-probs of the candidates under `role`'s model ("critic", "reference"), kept as
    `<role>_logps.pt` in directory `keep` for a rerun of a run cut off (None: kept nowhere)."""
    path = Path(keep) / f"{role}_logps.pt" if keep is not None else None
    return kept_segment_logps(model, sequences, batch_size, pad_id, path, desc=f"{role} log-probs")


def sampling_scores(
    critic: nn.Module,
    sequences: Sequence[SegmentedSequence],
    sampled_means: list[float],
    batch_size: int,
    pad_id: int,
    keep: Path | None = None,
) -> CandidateScores:
    """The official code's score: the critic's mean log-prob of each candidate minus the sampling policy's own,
    `sampled_means`, recorded at sampling time in the policy's view. The critic's pass is kept in `keep`."""
    mine = candidate_logps(critic, "critic", sequences, batch_size, pad_id, keep)
    critic_mean = (mine.sums[:, 0] / mine.counts[:, 0].clamp(min=1)).tolist()
    return CandidateScores(critic_mean, sampled_means, [c - b for c, b in zip(critic_mean, sampled_means, strict=True)])


def require_sampled_logprobs(candidates: pl.DataFrame, path: Path | str) -> None:
    """`rank.baseline: sampling` needs every candidate's sampled log-prob; a server that returns none cannot give it."""
    missing = candidates["logprob_mean"].null_count()
    if missing:
        raise InputError(
            f"params.yaml: rank.baseline: 'sampling' subtracts the sampling policy's log-probs, and {missing:,} "
            f"candidates in {path} have none (candidates.policy's server returned none, as `transformers serve` does); "
            "use baseline 'reference', or sample with 'transformers' or a vLLM server"
        )


def ranking_summary(ranked: pl.DataFrame) -> dict:
    """The ranking's metrics: candidates and states scored, the mean score and its mean spread within a state."""
    spread = ranked.group_by("state_id").agg(pl.col("score").std())["score"]
    return {
        "candidates": ranked.height,
        "states": ranked["state_id"].n_unique(),
        "mean_score": round(float(ranked["score"].mean()), 5) if ranked.height else 0.0,
        "mean_score_spread_within_state": round(float(spread.mean()), 5) if spread.len() else 0.0,
    }
