"""Trajectories out to ColBench's official JSONL shape and back."""

from __future__ import annotations

import json
import re

import pytest

from sweetflow.colbench import import_official
from sweetflow.inputs import ImportRowError


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
