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
from sweetflow.core.errors import InputError
from sweetflow.core.inputs import FileLimits, ImportRowError, iter_jsonl
from sweetflow.core.tables import to_frame
from sweetflow.dialogue import AGENT
from sweetflow.rollout.offline import ROLES, parse_trajectory

OFFICIAL_ROLE = {ours: theirs for theirs, ours in ROLES.items()}


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
            row = {
                "task": to_official_row(task),
                "dialogue_history": dialogue,
                "answer": traj["answer"],
                "reward": traj["reward"],
            }
            fh.write(json.dumps(row) + "\n")
            n += 1
    return n


def import_official(path: Path | str, limits: FileLimits | None = None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(trajectories, tasks) from an official trajectory JSONL read within `limits`; a bad line names its field,
    and a file without a trajectory is an error too. The pipeline's own import (`rollout.source: import`) is
    `sweetflow.rollout.offline`."""
    tasks: dict[str, dict] = {}
    records = []
    samples: dict[str, int] = {}
    for line, row in iter_jsonl(path, bounds=limits):
        if not isinstance(row.get("task"), dict):
            raise ImportRowError(path, line, "task", "expected an object with the ColBench task")
        task = task_from_row(row["task"], path, line)
        tasks.setdefault(task["task_id"], task)
        record = parse_trajectory(row, path, line)
        sample = samples[task["task_id"]] = samples.get(task["task_id"], -1) + 1
        records.append({"task_id": task["task_id"], "sample": sample, **record})
    if not records:
        raise InputError(f"{path}: no trajectory to import (the file is empty or blank)")
    return to_frame(records), tasks_frame(list(tasks.values()), TASK_SCHEMA)
