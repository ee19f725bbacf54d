"""Bootstrap intervals for the critics' mechanism metrics, and the two critics' paired difference.

The critics' stages report point values (`sweetflow.rl.critic_quality`, `sweetflow.rl.critic_check`);
whether the critic that reads the training-time information is better than the one that does not
needs intervals. Both critics score the same labelled candidates at the same states, so their
good-vs-bad accuracies are paired by state: one resample of states serves both, and the interval is
that of the difference. Ranking agreement is not paired (each critic picks its own best and worst
candidate at its own states): each critic gets its own interval.

Each resample draws states with replacement and recomputes the stage's own figure on them (a state
drawn twice counts twice), so the interval is of exactly what the stage reports.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import polars as pl

from sweetflow.rl.critic_check import agreement
from sweetflow.rl.critic_quality import combinations, good_vs_bad_accuracy


@dataclass(frozen=True)
class Estimate:
    """A figure (a share), its percentile bootstrap interval, and how many states it rests on."""

    value: float
    low: float
    high: float
    states: int

    def as_dict(self) -> dict:
        return asdict(self)


def resample_states(frame: pl.DataFrame, draw: list[str]) -> pl.DataFrame:
    """`frame`'s rows of each state in `draw`, a state drawn k times present k times under new ids
    (so that a join within a state never pairs one copy's rows with another's)."""
    index = pl.DataFrame({"state_id": draw, "copy": [f"{s}@{i}" for i, s in enumerate(draw)]})
    return frame.join(index, on="state_id").drop("state_id").rename({"copy": "state_id"})


def _interval(values: list[float], point: float, states: int, level: float) -> Estimate:
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return Estimate(round(point, 4), round(float(low), 4), round(float(high), 4), states)


def accuracy_difference(
    scored_a: pl.DataFrame,
    scored_b: pl.DataFrame,
    resamples: int = 2000,
    level: float = 0.95,
    seed: int = 0,
    length_match: float | None = None,
) -> dict[str, Estimate]:
    """Good-vs-bad accuracy of critics (or scorers) A and B and of A − B, resampling the states that hold a
    (good, bad) combination: every mixed state, or with `length_match` those with a length-matched one
    (`sweetflow.rl.critic_quality.good_vs_bad_accuracy`). `scored_*`: a critic_quality stage's scored.parquet
    (state_id, candidate, good, score, n_tokens), of the same candidates."""
    labels = scored_a.select("state_id", "candidate", "good").sort("state_id", "candidate")
    if not scored_b.select("state_id", "candidate", "good").sort("state_id", "candidate").equals(labels):
        raise ValueError("the two critics were scored on different labelled candidates; they cannot be paired")
    kept = ["state_id", "candidate", "score", *(["n_tokens"] if length_match else [])]
    scores_a, scores_b = (s.select(kept) for s in (scored_a, scored_b))
    compared = sorted(combinations(scores_a, labels, length_match)["state_id"].unique().to_list())

    def accuracies(draw: list[str]) -> tuple[float, float]:
        marks = resample_states(labels, draw)
        a = good_vs_bad_accuracy(resample_states(scores_a, draw), marks, length_match)
        b = good_vs_bad_accuracy(resample_states(scores_b, draw), marks, length_match)
        return a["good_vs_bad_accuracy"], b["good_vs_bad_accuracy"]

    point_a, point_b = accuracies(compared)
    rng = np.random.default_rng(seed)
    drawn = [accuracies([compared[i] for i in rng.integers(0, len(compared), len(compared))]) for _ in range(resamples)]
    return {
        "a": _interval([a for a, _ in drawn], point_a, len(compared), level),
        "b": _interval([b for _, b in drawn], point_b, len(compared), level),
        "a_minus_b": _interval([a - b for a, b in drawn], point_a - point_b, len(compared), level),
    }


def agreement_interval(
    picked: pl.DataFrame, outcomes: pl.DataFrame, resamples: int = 2000, level: float = 0.95, seed: int = 0
) -> Estimate:
    """Ranking agreement (`sweetflow.rl.critic_check.agreement`) and its interval over the decided
    states. `picked` and `outcomes`: a critic_check stage's picked.parquet and trajectories.parquet."""
    point = agreement(picked, outcomes)
    decided = point["states_decided"]
    rng = np.random.default_rng(seed)
    states = picked["state_id"].to_list()
    values = []
    for _ in range(resamples):
        draw = picked[rng.integers(0, len(states), len(states)).tolist()]
        share = agreement(draw, outcomes)["ranking_agreement"]
        if share is not None:
            values.append(share)
    return _interval(values, point["ranking_agreement"], decided, level)
