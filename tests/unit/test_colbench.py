"""Trajectories out to ColBench's official JSONL shape and back."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sweetflow.cli import main
from sweetflow.colbench import import_official
from sweetflow.core.inputs import ImportRowError

ROW = {
    "task": {"problem_description": "p", "ground_truth": "def f(x):\n    return x", "test_cases": {"test1": "f(1)"}},
    "dialogue_history": [{"role": "assistant", "content": "I WANT TO ANSWER: def f(x): return x"}],
    "answer": "def f(x): return x",
    "reward": 1.0,
}


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
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(ROW) + "\n" + json.dumps({**ROW, **change}) + "\n")
    with pytest.raises(ImportRowError, match=re.escape(f"line 2: field {field!r}")):
        import_official(path)


# What json reads besides scores: NaN and Infinity (Python's json takes them), booleans, strings, and
# numbers out of range; each would pass into every mean and success rate of the import.
not_rewards = st.one_of(
    st.sampled_from(["NaN", "Infinity", "-Infinity", "true", "false", '"0.5"', "[1]", "{}"]),
    st.floats(allow_nan=False, allow_infinity=False).filter(lambda x: not 0 <= x <= 1).map(json.dumps),
    st.integers().filter(lambda n: n not in (0, 1)).map(str),
)


@given(not_rewards)
def test_a_reward_that_is_not_a_score_names_file_line_and_field(tmp_path_factory, reward):
    path = tmp_path_factory.mktemp("rewards") / "t.jsonl"
    line = json.dumps({**ROW, "reward": "REWARD"}).replace('"REWARD"', reward)
    path.write_text(json.dumps(ROW) + "\n" + line + "\n")
    expected = f"{path}: line 2: field 'reward': "  # a number out of range, or one no table holds (NaN, 2**64)
    with pytest.raises(ImportRowError, match=re.escape(expected)):
        import_official(path)


@given(st.one_of(st.floats(0, 1), st.sampled_from([0, 1, None])))
def test_scores_from_0_to_1_and_null_are_rewards(tmp_path_factory, reward):
    path = tmp_path_factory.mktemp("rewards") / "t.jsonl"
    path.write_text(json.dumps({**ROW, "reward": reward}) + "\n")
    trajectories, _ = import_official(path)
    assert trajectories["reward"].to_list() == [None if reward is None else float(reward)]


def test_the_cli_names_a_nan_reward_in_one_line(tmp_path, capsys):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(ROW).replace("1.0", "NaN") + "\n")
    assert main(["import-trajectories", str(path), "--out", str(tmp_path / "out")]) == 2
    out = capsys.readouterr().out
    assert out == f"error: {path}: line 1: field 'reward': nan is not a finite number\n"
    assert not (tmp_path / "out").exists()
