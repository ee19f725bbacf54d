"""Candidate actions (SWEET-RL step 4): `n` fresh actions of a sampling policy at each sampled turn
state, with the log-probs the policy reports, if any (the official ranking variant subtracts them)."""

from __future__ import annotations

import hashlib

import polars as pl
from tqdm import tqdm

from sweetflow.core.artifacts import JsonLines
from sweetflow.core.tables import dialogues_by_trajectory, turn_limits_by_trajectory
from sweetflow.dialogue import Agent, AgentTurn
from sweetflow.views import dialogue_view

CANDIDATE_SCHEMA = pl.Schema(
    {
        "state_id": pl.String,
        "task_id": pl.String,
        "sample": pl.Int32,
        "turn": pl.Int32,
        "position": pl.Int32,  # the state is the trajectory's dialogue[:position]
        "candidate": pl.Int32,
        "message": pl.String,
        "logprob_sum": pl.Float64,  # the sampling policy's, without the training-time information
        "logprob_mean": pl.Float64,
        "n_tokens": pl.Int64,
    }
)


def candidate_seed(seed: int, state_id: str, candidate: int) -> int:
    digest = hashlib.sha256(f"{seed}:{state_id}:{candidate}".encode()).digest()
    return int.from_bytes(digest[:6], "big")


def generate_candidates(
    agent: Agent,
    tasks: dict[str, dict],
    trajectories: pl.DataFrame,
    states: pl.DataFrame,
    n: int,
    seed: int,
    chunk: int = 128,
    keep: JsonLines | None = None,
) -> tuple[pl.DataFrame, int]:
    """`n` actions of `agent` at each state (CANDIDATE_SCHEMA rows) and how many generations failed
    (e.g. a prompt longer than the model's context); a failed candidate is left out. The log-probs
    are null where the agent's backend returns none (`transformers serve`). Generated `chunk` at a time;
    each chunk done is appended to `keep`, and a rerun reads the chunks kept there instead of generating
    them again (on a real model on a CPU the stage takes most of an hour)."""
    dialogues, limits = dialogues_by_trajectory(trajectories), turn_limits_by_trajectory(trajectories)
    jobs = []
    for state in states.iter_rows(named=True):
        key = (state["task_id"], state["sample"])
        prefix, limit = dialogues[key][: state["position"]], limits[key]
        for k in range(n):
            view = dialogue_view(tasks[state["task_id"]], prefix, limit, candidate_seed(seed, state["state_id"], k))
            jobs.append((state, k, view))
    kept = {(r["start"], r["size"]): r for r in keep.read()} if keep is not None else {}
    rows, failed = [], 0
    with tqdm(total=len(jobs), desc="candidates", unit="action") as bar:
        for start in range(0, len(jobs), chunk):
            part = jobs[start : start + chunk]
            done = kept.get((start, len(part)))
            if done is None:
                done = {"start": start, "size": len(part), **_generate(agent, part)}
                if keep is not None:
                    keep.append([done])
            rows += done["rows"]
            failed += done["failed"]
            bar.update(len(part))
    frame = pl.DataFrame(rows, schema=CANDIDATE_SCHEMA) if rows else CANDIDATE_SCHEMA.to_frame()
    return frame.select(CANDIDATE_SCHEMA.names()), failed


def _generate(agent: Agent, jobs: list[tuple[dict, int, object]]) -> dict:
    """One batch of (state, candidate, view) jobs: the rows of the candidates generated, and how many failed."""
    rows, failed = [], 0
    for (state, k, _), turn in zip(jobs, agent.act([view for _, _, view in jobs])):
        if isinstance(turn, AgentTurn):
            rows.append(
                {
                    **state,
                    "candidate": k,
                    "message": turn.message,
                    "logprob_sum": turn.logprob_sum,
                    "logprob_mean": turn.logprob_mean,
                    "n_tokens": turn.n_tokens,
                }
            )
        else:
            failed += 1
    return {"rows": rows, "failed": failed}
