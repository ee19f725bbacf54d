"""Preference pairs as data (SWEET-RL steps 2, 4 and 6): which trajectory beats which, which turn
states get fresh candidate actions, and which candidate beats which. Pure functions on polars frames;
every random choice is fixed by a seed.

Episodes that failed for infrastructure reasons (`failure` not null: the agent or simulator errored)
are left out everywhere: their reward 0 says nothing about the agent's choices.
"""

from __future__ import annotations

import hashlib
from typing import Literal, get_args

import numpy as np
import polars as pl

from sweetflow.core.params import StepPairRule
from sweetflow.dialogue import AGENT

TRAJECTORY_PAIR_SCHEMA = pl.Schema(
    {
        "task_id": pl.String,
        "chosen_sample": pl.Int32,
        "rejected_sample": pl.Int32,
        "chosen_reward": pl.Float64,
        "rejected_reward": pl.Float64,
    }
)
TURN_STATE_SCHEMA = pl.Schema(
    {
        "state_id": pl.String,  # "<task_id>:<sample>:<turn>"
        "task_id": pl.String,
        "sample": pl.Int32,
        "turn": pl.Int32,  # agent-turn index, 0-based
        "position": pl.Int32,  # index of that agent message in `dialogue`: the state is dialogue[:position]
    }
)
# Reward gaps are differences of floats: 0.3 − 0.2 = 0.0999…98 must still count as a gap of 0.1.
GAP_TOLERANCE = 1e-9


def _usable(trajectories: pl.DataFrame, columns: list[str]) -> pl.DataFrame:
    missing = sorted(set(columns + ["failure"]) - set(trajectories.columns))
    if missing:
        raise ValueError(f"trajectories lack column(s) {missing} (see sweetflow.core.tables.TRAJECTORY_SCHEMA)")
    return trajectories.filter(pl.col("failure").is_null()).select(columns)


def trajectory_pairs(trajectories: pl.DataFrame, success_reward: float = 1.0, min_gap: float = 0.1) -> pl.DataFrame:
    """Trajectory-level preference pairs, one row per pair (TRAJECTORY_PAIR_SCHEMA), sorted. ColBench's
    two rules differ by whether a reward has a pass mark, which the trajectories' `success` says:

    with one (backend tests; official `evaluate_code.py`): for each task whose best sample reaches
    `success_reward`, the best sample (chosen) against each sample of strictly lower reward
    (rejected). "Best" is the highest reward, ties to the lowest sample index (numpy argmax, as the
    official code); other samples tied with the best are neither chosen nor rejected. Tasks where
    every sample failed give no pair: there is nothing to prefer.
    without one (`success` null: frontend similarities; official `evaluate_html.py`): within each
    task, every pair of samples whose rewards differ by at least `min_gap`, the higher one chosen.
    Any clear gap is a preference.
    """
    valid = _usable(trajectories, ["task_id", "sample", "reward", "success"])
    marked = valid["success"].is_not_null()
    if marked.all():
        best = (
            valid.sort(["task_id", "reward", "sample"], descending=[False, True, False])
            .group_by("task_id", maintain_order=True)
            .first()
            .filter(pl.col("reward") >= success_reward)
        )
        pairs = best.join(valid, on="task_id", suffix="_other").filter(pl.col("reward_other") < pl.col("reward"))
    elif not marked.any():
        if min_gap <= 0:
            raise ValueError(f"min_gap must be positive (a pair of equal rewards is no preference); got {min_gap}")
        pairs = valid.join(valid, on="task_id", suffix="_other").filter(
            pl.col("reward") - pl.col("reward_other") >= min_gap - GAP_TOLERANCE
        )
    else:
        raise ValueError("trajectories mix rewards with a pass mark (`success` set) and without one (null)")
    return (
        pairs.select(
            "task_id",
            chosen_sample="sample",
            rejected_sample="sample_other",
            chosen_reward="reward",
            rejected_reward="reward_other",
        )
        .cast(TRAJECTORY_PAIR_SCHEMA)
        .sort("task_id", "chosen_sample", "rejected_sample")
    )


def turn_states(trajectories: pl.DataFrame) -> pl.DataFrame:
    """Every (trajectory, agent turn) state of the usable trajectories (TURN_STATE_SCHEMA), sorted."""
    valid = _usable(trajectories, ["task_id", "sample", "dialogue"])
    return (
        valid.with_columns(position=pl.int_ranges(pl.col("dialogue").list.len()))
        .explode("dialogue", "position")
        .filter(pl.col("dialogue").struct.field("role") == AGENT)
        .with_columns(turn=pl.col("position").rank("ordinal").over("task_id", "sample") - 1)
        .select(
            state_id=pl.format("{}:{}:{}", "task_id", "sample", "turn"),
            task_id="task_id",
            sample="sample",
            turn="turn",
            position="position",
        )
        .cast(TURN_STATE_SCHEMA)
        .sort("task_id", "sample", "turn")
    )


def sample_turn_states(
    trajectories: pl.DataFrame, share: float, seed: int, rule: Literal["uniform", "first_trajectories"] = "uniform"
) -> pl.DataFrame:
    """The turn states that get candidates, sorted like `turn_states`; the same frame, seed and rule
    give the same states.

    uniform: a uniform sample, without replacement, of `share` of all (trajectory, agent turn) states
    (paper: 10%; more over-fits the policy to the offline data): exactly round(share · N) states, at
    least one when there are any. first_trajectories (the official script): every turn of the first
    round(share · T) trajectories in the file's order (at least one), whatever their lengths."""
    if not 0 < share <= 1:
        raise ValueError(f"share must be in (0, 1]; got {share}")
    states = turn_states(trajectories)
    if states.is_empty():
        return states
    if rule == "first_trajectories":
        usable = _usable(trajectories, ["task_id", "sample"])
        first = usable.head(max(1, round(share * usable.height)))
        return states.join(first, on=["task_id", "sample"], how="semi")
    if rule != "uniform":
        raise ValueError(f"unknown state rule {rule!r}: expected 'uniform' or 'first_trajectories'")
    count = max(1, round(share * states.height))
    picked = np.sort(np.random.default_rng(seed).choice(states.height, size=count, replace=False))
    return states[picked]


def step_pairs(
    candidates: pl.DataFrame,
    num_pairs: int,
    seed: int,
    rule: StepPairRule = "halves",
    max_per_state: int = 8,
    max_length_ratio: float = 1.5,
) -> pl.DataFrame:
    """Step-level pairs from scored candidate actions (step 6). `candidates` has one row per
    (state_id, candidate) with the critic's `score`; out comes one row per pair: state_id, chosen,
    rejected (candidate indices), chosen_score, rejected_score; sorted by state_id, chosen, rejected.

    Per state, candidates are sorted by score, highest first, ties by lower candidate index. With n
    candidates the top half is the first ⌊n/2⌋ and the bottom half the last ⌊n/2⌋: for odd n the
    median candidate is in neither. A pair is a (top, bottom) combination whose scores differ — a
    tie carries no preference, so tied combinations are never used. States with fewer than two
    candidates give nothing.

    halves (the paper's rule): per state, `num_pairs` distinct pairs drawn uniformly from its
    combinations (all of them when there are fewer); without ties, the chosen candidate is then
    uniform over the top half and the rejected one over the bottom half. Each state's draw depends
    only on `seed` and its state_id, so adding or removing other states changes no existing pair.

    largest_gaps: the same number of pairs in all (`num_pairs` × the states), taken where the critic
    is surest: the combinations of every state by decreasing score gap, at most `max_per_state` from
    one state (ties by state_id, chosen, rejected; no draw). Measured on the default run's training
    candidates, this triples the share of pairs that put a good action against a bad one for the
    critic with training-time information, and cuts it for the one without (docs/algorithm.md).
    """
    if num_pairs < 1:
        raise ValueError(f"num_pairs must be at least 1; got {num_pairs}")
    if rule not in get_args(StepPairRule):
        raise ValueError(f"unknown step-pair rule {rule!r}: expected one of {get_args(StepPairRule)}")
    if rule == "length_matched" and "n_tokens" not in candidates.columns:
        raise ValueError("rule 'length_matched' needs each candidate's token count (column n_tokens)")
    if max_length_ratio < 1:
        raise ValueError(f"max_length_ratio must be at least 1; got {max_length_ratio}")
    if candidates["score"].is_null().any() or candidates["score"].is_nan().any():
        bad = candidates.filter(pl.col("score").is_null() | pl.col("score").is_nan())["state_id"][0]
        raise ValueError(f"candidate scores must be numbers: state {bad!r} has a null or NaN score")
    if candidates.select("state_id", "candidate").is_duplicated().any():
        raise ValueError("each (state_id, candidate) must appear once")
    lengths = pl.col("n_tokens") if rule == "length_matched" else pl.lit(1).alias("n_tokens")
    ranked = (
        candidates.sort(["state_id", "score", "candidate"], descending=[False, True, False])
        .group_by("state_id", maintain_order=True)
        .agg("candidate", "score", lengths)
    )
    rows = []
    for state_id, indices, scores, tokens in ranked.iter_rows():
        space = _combinations(scores)
        if rule == "length_matched":
            space = [
                (c, r) for c, r in space if max(tokens[c], tokens[r]) <= max_length_ratio * min(tokens[c], tokens[r])
            ]
        if rule in ("halves", "length_matched"):
            picked = _state_rng(seed, state_id).choice(len(space), size=min(num_pairs, len(space)), replace=False)
            space = [space[i] for i in picked]
        rows += [(state_id, indices[c], indices[r], scores[c], scores[r]) for c, r in space]
    index, score = candidates.schema["candidate"], pl.Float64
    schema = {
        "state_id": candidates.schema["state_id"],
        "chosen": index,
        "rejected": index,
        "chosen_score": score,
        "rejected_score": score,
    }
    pairs = pl.DataFrame(rows, schema=schema, orient="row")
    if rule == "largest_gaps":
        states = int((ranked["candidate"].list.len() >= 2).sum())
        pairs = (
            pairs.with_columns(gap=pl.col("chosen_score") - pl.col("rejected_score"))
            .sort(["gap", "state_id", "chosen", "rejected"], descending=[True, False, False, False])
            .filter(pl.int_range(pl.len()).over("state_id") < max_per_state)
            .head(num_pairs * states)
            .drop("gap")
        )
    return pairs.sort("state_id", "chosen", "rejected")


def length_bias(ranked: pl.DataFrame, pairs: pl.DataFrame) -> dict:
    """How much a critic's scores follow its candidates' length: the correlation of score with token
    count within a state (both centred on the state's mean, so that a state of long candidates does not
    count; None where either is constant), and the mean tokens of the step pairs' chosen and rejected
    actions. A critic that prefers short (or long) actions teaches the policy to be short (or long).
    `ranked`: state_id, candidate, n_tokens, score; `pairs`: state_id, chosen, rejected."""
    centred = ranked.select(
        (pl.col(c).cast(pl.Float64) - pl.col(c).cast(pl.Float64).mean().over("state_id")).alias(c)
        for c in ("score", "n_tokens")
    )
    varies = centred.height > 2 and centred["score"].std() > 0 and centred["n_tokens"].std() > 0
    out = {"score_length_corr": round(centred.select(pl.corr("score", "n_tokens")).item(), 4) if varies else None}
    lengths = ranked.select("state_id", "candidate", "n_tokens")
    for side in ("chosen", "rejected"):
        joined = pairs.join(lengths.rename({"candidate": side}), on=["state_id", side])
        out[f"{side}_tokens"] = round(joined["n_tokens"].mean(), 2) if joined.height else None
    return out


def _combinations(scores: list[float]) -> list[tuple[int, int]]:
    """Positions (in the best-first order) of every (top half, bottom half) pair with a strict gap."""
    half = len(scores) // 2
    return [(c, r) for c in range(half) for r in range(len(scores) - half, len(scores)) if scores[c] > scores[r]]


def _state_rng(seed: int, state_id: object) -> np.random.Generator:
    digest = hashlib.sha256(f"{seed}:{state_id}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "big"))
