"""What the site shows of episodes, as plain data: the test dialogues of each method, and SWEET-RL's
inside at sampled states (the candidates, each critic's score, played-out outcomes, the pairs).

Everything here reads the stages' tables and returns dicts of JSON-able values; `sweetflow.report.site`
writes them into the pages. What a domain adds to a task or an episode (the backend's facts and tests,
the frontend's rendered pages) its `DomainReport` says.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from sweetflow.core.definition import output_of, outputs_of
from sweetflow.core.tables import CANDIDATES, EPISODE_FILES, LABELS, PAIRS, PICKED, SEED_TRAJECTORIES, TRAJECTORIES
from sweetflow.domain_report import DomainReport
from sweetflow.rl.critic_check import SEPARATOR

# SWEET-RL states shown: those whose critic's best and worst candidates were played out come first.
MAX_STATES = 40
SEED_FILE = re.compile(re.escape(SEED_TRAJECTORIES).replace(re.escape("{seed}"), r"(\d+)") + "$")


def read_episodes(directory: Path) -> pl.DataFrame | None:
    """A method's test episodes under `directory` (every trajectories*.parquet), with a `seed_index`
    column (the k of trajectories-seed<k>, null for a single run); None when it has none."""
    frames = []
    for path in sorted(directory.glob(EPISODE_FILES)):
        match = SEED_FILE.search(path.name)
        frame = pl.read_parquet(path)
        frames.append(frame.with_columns(seed_index=pl.lit(int(match.group(1)) if match else None, pl.Int64)))
    return pl.concat(frames, how="diagonal_relaxed") if frames else None


def task_entry(report: DomainReport, task: dict, pictures: object | None) -> dict:
    """What every dialogue of a task shares: its family and request, and what its domain adds."""
    entry = {"family": task.get("family") or task.get("site") or "—", "request": task.get("problem_description", "")}
    return entry | report.task_details(task, pictures)


def dialogues(
    report: DomainReport, methods: dict[str, pl.DataFrame], tasks: dict[str, dict], pictures: object | None
) -> dict:
    """The dialogues page's data: tasks by id, and the episodes of every method its domain shows
    (frontend: the first few of each method's first seed, each turn's page rendered)."""
    episodes, used = [], set()
    for method, frame in methods.items():
        rows = [
            (tasks[row["task_id"]], row, [{"role": t["role"], "text": t["content"]} for t in row["dialogue"]])
            for row in report.shown_episodes(frame).iter_rows(named=True)
            if row["task_id"] in tasks
        ]
        report.prepare(rows, pictures)
        for task, row, turns in rows:
            used.add(row["task_id"])
            entry = {
                "method": method,
                "seed": row["seed_index"],
                "task": row["task_id"],
                "sample": row["sample"],
                "reward": row["reward"],
                "success": row["success"],
                "ended_by": row["ended_by"],
                "failure": row["failure"],
                "outcome": report.outcome(row["reward"], row["success"], row["failure"]),
                "answer": row["answer"],
                "turns": turns,
            }
            entry.update(report.episode_details(task, row, turns, pictures))
            episodes.append(entry)
    shown = {task_id: task_entry(report, tasks[task_id], pictures) for task_id in sorted(used)}
    return {
        "domain": report.name,
        "methods": list(methods),
        "tasks": shown,
        "episodes": episodes,
        "frontend_limit": report.dialogue_limit,
    }


def read_table(path: Path) -> pl.DataFrame | None:
    return pl.read_parquet(path) if path.is_file() else None


def sweet_states(domain: str, tasks: dict[str, dict]) -> dict | None:
    """SWEET-RL at sampled states of `domain`, each stage's output found by its entry in dvc.yaml: the
    dialogue so far, the candidate actions, each ranking critic's score of each, its label (good or
    bad), the critic check's played-out outcomes and each critic's step pairs; None before the
    candidates stage has run."""
    candidates = read_table(output_of("candidates", domain, file=CANDIDATES))
    rollout = read_table(output_of("rollout", domain, file=TRAJECTORIES))
    if candidates is None or rollout is None:
        return None
    critics = list(outputs_of("rank", domain))
    picked = {c: read_table(output_of("critic_check", domain, c, PICKED)) for c in critics}
    checked = sorted({s for f in picked.values() if f is not None for s in f["state_id"].to_list()})
    states = list(dict.fromkeys(checked + sorted(candidates["state_id"].unique().to_list())))[:MAX_STATES]
    chosen = candidates.filter(pl.col("state_id").is_in(states))
    dialogues = {(t, s): d for t, s, d in rollout.select("task_id", "sample", "dialogue").iter_rows()}
    scores = {
        c: _by_state(read_table(output_of("rank", domain, c, CANDIDATES)), ["candidate", "score"]) for c in critics
    }
    pairs = {
        c: _by_state(read_table(output_of("step_pairs", domain, c, PAIRS)), ["chosen", "rejected"]) for c in critics
    }
    labels = _by_state(read_table(output_of("candidate_labels", domain, file=LABELS)), ["candidate", "kind", "good"])
    played = {c: _played_out(output_of("critic_check", domain, c), picked[c]) for c in critics}
    out = []
    for state_id in states:
        rows = chosen.filter(pl.col("state_id") == state_id).sort("candidate")
        first = rows.row(0, named=True)
        task = tasks.get(first["task_id"], {})
        prefix = dialogues.get((first["task_id"], first["sample"]), [])[: first["position"]]
        kinds = {c: (k, g) for c, k, g in labels.get(state_id, [])}
        out.append(
            {
                "state": state_id,
                "task": first["task_id"],
                "turn": first["turn"],
                "family": task.get("family") or task.get("site") or "—",
                "request": task.get("problem_description", ""),
                "facts": [f["fact"] for f in task.get("facts") or []],
                "dialogue": [{"role": t["role"], "text": t["content"]} for t in prefix],
                "candidates": [
                    {
                        "index": c,
                        "message": m,
                        "kind": kinds.get(c, (None, None))[0],
                        "good": kinds.get(c, (None, None))[1],
                    }
                    for c, m in rows.select("candidate", "message").iter_rows()
                ],
                "scores": {c: {str(i): s for i, s in scores[c].get(state_id, [])} for c in critics},
                "pairs": {c: [list(p) for p in pairs[c].get(state_id, [])] for c in critics},
                "played_out": {c: played[c][state_id] for c in critics if state_id in played[c]},
            }
        )
    return {
        "critics": critics,
        "states": out,
        "total_states": candidates["state_id"].n_unique(),
        "per_state": int(candidates.group_by("state_id").len()["len"].max()),
    }


def _by_state(frame: pl.DataFrame | None, columns: list[str]) -> dict[str, list[tuple]]:
    if frame is None:
        return {}
    grouped: dict[str, list[tuple]] = {}
    for state_id, *rest in frame.select("state_id", *columns).iter_rows():
        grouped.setdefault(state_id, []).append(tuple(rest))
    return grouped


def _played_out(directory: Path, picked: pl.DataFrame | None) -> dict[str, dict]:
    """Per checked state: the critic's best and worst candidates and the mean reward each reached
    when the base policy played the dialogue on from it (task ids "<state_id>#<candidate>")."""
    episodes = read_table(directory / TRAJECTORIES)
    if picked is None or episodes is None:
        return {}
    means = dict(episodes.group_by("task_id").agg(pl.col("reward").mean()).iter_rows())
    return {
        s: {
            "best": b,
            "worst": w,
            "best_reward": means.get(f"{s}{SEPARATOR}{b}"),
            "worst_reward": means.get(f"{s}{SEPARATOR}{w}"),
        }
        for s, b, w in picked.select("state_id", "best", "worst").iter_rows()
    }
