"""Trajectories in ColBench's official JSONL shape, out and in.

A line is `{"task": <ColBench task>, "dialogue_history": [...], "answer": str, "reward": float}`;
the dialogue alternates `assistant` (the agent: `content`, plus the model's `input` and `output`)
and `user` (the human). The official offline data set has this shape, so importing it gives
trajectories the SWEET-RL stages can train on, and exporting ours lets other tools read them.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from sweetflow.backend.tasks.colbench import task_from_row, to_official_row
from sweetflow.backend.tasks.table import TASK_SCHEMA
from sweetflow.backend.tasks.table import to_frame as tasks_frame
from sweetflow.dialogue import AGENT, HUMAN, final_answer
from sweetflow.inputs import ImportRowError, iter_jsonl
from sweetflow.tables import TURN, to_frame

OFFICIAL_ROLE = {AGENT: "assistant", HUMAN: "user"}


def export_official(trajectories: pl.DataFrame, tasks: pl.DataFrame, path: Path | str) -> int:
    """Write one official line per trajectory; return how many."""
    by_id = {t["task_id"]: t for t in tasks.iter_rows(named=True)}
    n = 0
    with open(path, "w", encoding="utf-8") as fh:
        for traj in trajectories.iter_rows(named=True):
            task = by_id.get(traj["task_id"])
            if task is None:
                raise ValueError(f"trajectory of task {traj['task_id']!r} has no row in the task table")
            dialogue = []
            for turn in traj["dialogue"]:
                entry = {"role": OFFICIAL_ROLE[turn["role"]], "content": turn["content"]}
                if turn["role"] == AGENT:
                    entry.update(input=turn["prompt"], output=turn["raw"])
                dialogue.append(entry)
            row = {"task": to_official_row(task), "dialogue_history": dialogue, "answer": traj["answer"], "reward": traj["reward"]}
            fh.write(json.dumps(row) + "\n")
            n += 1
    return n


def import_official(path: Path | str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(trajectories, tasks) from an official trajectory JSONL; a bad line names its field."""
    tasks: dict[str, dict] = {}
    records = []
    samples: dict[str, int] = {}
    for line, row in iter_jsonl(path):
        if not isinstance(row.get("task"), dict):
            raise ImportRowError(path, line, "task", "expected an object with the ColBench task")
        task = task_from_row(row["task"], path, line)
        tasks.setdefault(task["task_id"], task)
        history = row.get("dialogue_history")
        if not isinstance(history, list):
            raise ImportRowError(path, line, "dialogue_history", "expected a list of turns")
        dialogue = [_turn(t, path, line, i) for i, t in enumerate(history)]
        agent_turns = [t for t in dialogue if t["role"] == AGENT]
        answer = row.get("answer")
        if not isinstance(answer, str):
            raise ImportRowError(path, line, "answer", "expected a string")
        reward = row.get("reward")
        if reward is not None and not _is_reward(reward):
            raise ImportRowError(path, line, "reward", f"expected a number from 0 to 1 (or null), got {reward!r:.40}")
        sample = samples[task["task_id"]] = samples.get(task["task_id"], -1) + 1
        records.append(
            {
                "task_id": task["task_id"],
                "sample": sample,
                "seed": None,
                "dialogue": dialogue,
                "answer": answer,
                "answered": bool(agent_turns) and final_answer(agent_turns[-1]["content"]) is not None,
                "ended_by": None,  # not in the official shape
                "n_turns": len(agent_turns),
                "reward": float(reward) if reward is not None else None,
                "success": reward is not None and float(reward) == 1.0,
                "score_status": None,
                "failure": None,
                "test_outputs": None,
            }
        )
    return to_frame(records), tasks_frame(list(tasks.values()), TASK_SCHEMA)


def _is_reward(value: object) -> bool:
    # json reads NaN and Infinity, and true is an int to Python: none of them is a score, and each
    # would pass into every mean and success rate computed from the import.
    return type(value) in (int, float) and 0 <= value <= 1


def _turn(turn: object, path, line: int, i: int) -> dict:
    field = f"dialogue_history[{i}]"
    if not isinstance(turn, dict) or not isinstance(turn.get("content"), str):
        raise ImportRowError(path, line, field, "expected an object with a string `content`")
    role = {"assistant": AGENT, "user": HUMAN}.get(turn.get("role"))
    if role is None:
        raise ImportRowError(path, line, f"{field}.role", f"expected 'assistant' or 'user', got {turn.get('role')!r}")
    out = dict.fromkeys(TURN.to_schema(), None)
    out.update(role=role, content=turn["content"])
    if role == AGENT:
        out.update(prompt=turn.get("input"), raw=turn.get("output"))
    return out
