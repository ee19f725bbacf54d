"""The validation split: carved from the training tasks, disjoint from every other split."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sweetflow.backend.tasks.procedural import generate_tasks
from sweetflow.core.errors import InputError
from sweetflow.core.tables import split_off_validation, turn_limit


@given(st.integers(0, 30), st.integers(0, 29))
def test_the_last_n_val_training_tasks_become_validation(n, n_val):
    tasks = [{"task_id": str(i)} for i in range(n)]
    if n_val and n <= n_val:
        with pytest.raises(InputError, match=f"n_val={n_val}"):
            split_off_validation(tasks, n_val, "train.jsonl")
        return
    train, val = split_off_validation(tasks, n_val, "train.jsonl")
    assert train + val == tasks and len(val) == n_val


def test_adding_validation_tasks_keeps_the_train_and_test_splits():
    train, test = generate_tasks(40, 20, seed=5)
    more, same_test = generate_tasks(40 + 15, 20, seed=5)
    kept, val = split_off_validation(more, 15, "backend.tasks")
    assert kept == train and same_test == test
    refs = [{t["ground_truth"] for t in split} for split in (kept, val, test)]
    assert all(not (a & b) for i, a in enumerate(refs) for b in refs[i + 1 :])


def test_a_table_gives_its_one_recorded_turn_limit_or_names_itself():
    assert turn_limit(pl.DataFrame({"max_turns": [3, 3]}), "demos") == 3
    for limits in ([3, 10], [None, None]):
        with pytest.raises(InputError, match="demos: expected one recorded turn limit"):
            turn_limit(pl.DataFrame({"max_turns": limits}, schema={"max_turns": pl.Int32}), "demos")
