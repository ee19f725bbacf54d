"""Trajectories out to ColBench's official JSONL shape and back."""

from __future__ import annotations

import json
import re

import polars as pl
import pytest

from sweetflow.cli import main
from sweetflow.tasks.colbench import ImportRowError
from sweetflow.trajectory_io import import_official


@pytest.mark.xdist_group("pipeline")  # shares the reproduced DAG with tests/test_pipeline.py
def test_rollouts_round_trip_through_the_official_shape(repro_project, tmp_path):
    rollouts = repro_project / "data/backend/rollout/trajectories.parquet"
    out = tmp_path / "official.jsonl"
    assert main(["export-trajectories", str(rollouts), "--tasks", str(repro_project / "data/backend/tasks/train.parquet"),
                 "--out", str(out)]) == 0
    first = json.loads(out.read_text().splitlines()[0])
    assert set(first) == {"task", "dialogue_history", "answer", "reward"}
    assert first["dialogue_history"][0]["role"] == "assistant" and "input" in first["dialogue_history"][0]
    assert set(first["task"]) == {"problem_description", "ground_truth", "hidden_information", "test_cases"}

    assert main(["import-trajectories", str(out), "--out", str(tmp_path / "back")]) == 0
    back = pl.read_parquet(tmp_path / "back/trajectories.parquet")
    ours = pl.read_parquet(rollouts)
    assert back["answer"].to_list() == ours["answer"].to_list()
    assert back["reward"].to_list() == ours["reward"].to_list()
    assert back["answered"].to_list() == ours["answered"].to_list()
    assert back["sample"].to_list() == ours["sample"].to_list()
    kept = ["role", "content", "prompt", "raw"]
    assert [[{k: t[k] for k in kept} for t in d] for d in back["dialogue"]] == [
        [{k: t[k] for k in kept} for t in d] for d in ours["dialogue"]
    ]
    tasks = pl.read_parquet(tmp_path / "back/tasks.parquet")
    assert tasks.height == ours["task_id"].n_unique()


@pytest.mark.parametrize(
    "change, field",
    [
        ({"dialogue_history": "hi"}, "dialogue_history"),
        ({"dialogue_history": [{"role": "robot", "content": "x"}]}, "dialogue_history[0].role"),
        ({"answer": None}, "answer"),
        ({"reward": "high"}, "reward"),
    ],
)
def test_bad_lines_name_their_field(tmp_path, change, field):
    row = {
        "task": {"problem_description": "p", "ground_truth": "def f(x):\n    return x", "test_cases": {"test1": "f(1)"}},
        "dialogue_history": [{"role": "assistant", "content": "I WANT TO ANSWER: def f(x): return x"}],
        "answer": "def f(x): return x",
        "reward": 1.0,
    }
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(row) + "\n" + json.dumps({**row, **change}) + "\n")
    with pytest.raises(ImportRowError, match=re.escape(f"line 2: field {field!r}")):
        import_official(path)
