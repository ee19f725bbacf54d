"""How good is a critic? Its ranking of two candidate actions against what happens when each is
played out to the end.

For a sample of ranked states, the critic's best and worst candidate are each continued by the
sampling policy, from the state with that candidate as the agent's next message, to the end of the
episode, `rollouts` times each; the outcome of a candidate is its mean reward. The critic agrees
when the candidate it ranked higher has the higher outcome; states whose two outcomes are equal
say nothing about the ranking and are counted apart.

The continuation replays the recorded dialogue (`sweetflow.agents.replay.ReplayAgent` says the
recorded agent messages and then the candidate, and the simulator answers them again: the scripted
simulator, and an LLM simulator at temperature 0, answer the same messages the same way), after
which the policy takes over.
"""

from __future__ import annotations

import polars as pl

from sweetflow.dialogue import AGENT

SEPARATOR = "#"  # episode task ids are "<state_id>#<candidate>"


def pick_extremes(ranked: pl.DataFrame, states: int, seed: int) -> pl.DataFrame:
    """For `states` states drawn at random among those with two differently scored candidates: the
    best and the worst candidate (columns state_id, best, worst, best_score, worst_score)."""
    extremes = (
        ranked.sort(["state_id", "score", "candidate"], descending=[False, True, False])
        .group_by("state_id", maintain_order=True)
        .agg(
            best=pl.col("candidate").first(),
            worst=pl.col("candidate").last(),
            best_score=pl.col("score").first(),
            worst_score=pl.col("score").last(),
        )
        .filter(pl.col("best_score") > pl.col("worst_score"))
    )
    return extremes.sample(min(states, extremes.height), seed=seed, shuffle=True).sort("state_id")


def continuation_tasks(
    picked: pl.DataFrame, candidates: pl.DataFrame, trajectories: pl.DataFrame, tasks: dict[str, dict]
) -> tuple[list[dict], dict[str, list[str]]]:
    """One task per (state, candidate) to play out — a copy of the state's task under the id
    "<state_id>#<candidate>" — and the agent messages each episode starts with."""
    messages = {(s, c): m for s, c, m in candidates.select("state_id", "candidate", "message").iter_rows()}
    dialogues = {(t, s): d for t, s, d in trajectories.select("task_id", "sample", "dialogue").iter_rows()}
    state_rows = candidates.unique("state_id").select("state_id", "task_id", "sample", "position")
    where = {row[0]: row[1:] for row in state_rows.iter_rows()}
    episode_tasks, scripts = [], {}
    for state_id, best, worst in picked.select("state_id", "best", "worst").iter_rows():
        task_id, sample, position = where[state_id]
        said = [turn["content"] for turn in dialogues[(task_id, sample)][:position] if turn["role"] == AGENT]
        for candidate in (best, worst):
            key = f"{state_id}{SEPARATOR}{candidate}"
            episode_tasks.append({**tasks[task_id], "task_id": key})
            scripts[key] = said + [messages[(state_id, candidate)]]
    return episode_tasks, scripts


def agreement(picked: pl.DataFrame, outcomes: pl.DataFrame) -> dict:
    """`outcomes`: the continuation trajectories (task_id "<state_id>#<candidate>", reward). The share
    of states whose higher-ranked candidate has the higher mean reward, among states where the two differ."""
    mean = (
        outcomes.with_columns(pl.col("task_id").str.split_exact(SEPARATOR, 1).struct.rename_fields(["state_id", "c"]))
        .unnest("task_id")
        .with_columns(candidate=pl.col("c").cast(pl.Int32))
        .group_by("state_id", "candidate")
        .agg(outcome=pl.col("reward").mean())
    )
    rows = picked.join(mean.rename({"candidate": "best", "outcome": "best_outcome"}), on=["state_id", "best"]).join(
        mean.rename({"candidate": "worst", "outcome": "worst_outcome"}), on=["state_id", "worst"]
    )
    decided = rows.filter(pl.col("best_outcome") != pl.col("worst_outcome"))
    agree = int((decided["best_outcome"] > decided["worst_outcome"]).sum())
    return {
        "states": rows.height,
        "states_decided": decided.height,
        "states_tied": rows.height - decided.height,
        "ranking_agreement": round(agree / decided.height, 4) if decided.height else None,
        "best_mean_outcome": round(float(rows["best_outcome"].mean()), 4) if rows.height else None,
        "worst_mean_outcome": round(float(rows["worst_outcome"].mean()), 4) if rows.height else None,
    }
