"""Import and export of the official ColBench backend JSONL shape."""

from __future__ import annotations

import json
import re
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sweetflow.backend.tasks.colbench import read_backend_jsonl, signature_of, to_official_row
from sweetflow.core.inputs import ImportRowError
from tests.support.project import SAMPLE

ROW = {
    "problem_description": "I need help with prices. The signature of the function is: def price(n, member)",
    "ground_truth": "def price(n, member):\n    return n * (0.85 if member else 1.0)",
    "test_cases": {f"test{i}": f"price({i}, {i % 2 == 0})" for i in range(1, 11)},
}


def write_rows(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_row_becomes_a_task_and_round_trips(tmp_path):
    (task,) = read_backend_jsonl(write_rows(tmp_path / "in.jsonl", [ROW]))
    assert task["function_name"] == "price"
    assert task["signature"] == "def price(n, member)"
    assert task["test_cases"][0] == "price(1, False)" and len(task["test_cases"]) == 10
    write_rows(tmp_path / "out.jsonl", [to_official_row(task)])
    (exported,) = read_backend_jsonl(tmp_path / "out.jsonl")
    assert exported == task
    assert to_official_row(task)["hidden_information"] == ROW["ground_truth"]


def test_tests_keep_numeric_order_not_lexical(tmp_path):
    (task,) = read_backend_jsonl(write_rows(tmp_path / "in.jsonl", [ROW]))
    assert task["test_cases"][9] == "price(10, True)"


@pytest.mark.parametrize(
    "field, value, expected",
    [
        ("problem_description", None, "field 'problem_description'"),
        ("ground_truth", 42, "field 'ground_truth'"),
        ("test_cases", ["price(1, True)"], "field 'test_cases'"),
        ("test_cases", {"test1": 3}, "field 'test_cases.test1'"),
    ],
)
def test_bad_row_names_file_line_and_field(tmp_path, field, value, expected):
    path = write_rows(tmp_path / "bad.jsonl", [ROW, {**ROW, field: value}])
    with pytest.raises(ImportRowError) as err:
        read_backend_jsonl(path)
    assert str(path) in str(err.value) and "line 2" in str(err.value) and expected in str(err.value)


def test_line_that_is_not_json_is_named(tmp_path):
    path = tmp_path / "broken.jsonl"
    path.write_text(json.dumps(ROW) + "\n{not json\n")
    with pytest.raises(ImportRowError, match="line 2"):
        read_backend_jsonl(path)


@given(st.integers(min_value=1, max_value=30))
def test_limit_reads_the_first_rows(tmp_path_factory, n):
    rows = [{**ROW, "ground_truth": ROW["ground_truth"] + f"  # {i}"} for i in range(30)]
    path = write_rows(tmp_path_factory.mktemp("rows") / "in.jsonl", rows)
    tasks = read_backend_jsonl(path, limit=n)
    assert [t["ground_truth"] for t in tasks] == [r["ground_truth"] for r in rows[:n]]


def test_real_rows_import_with_their_signatures():
    tasks = read_backend_jsonl(SAMPLE / "backend_test_first100.jsonl")
    assert len(tasks) == 100
    assert all(t["function_name"] and t["signature"].startswith(f"def {t['function_name']}") for t in tasks)
    assert all(len(t["test_cases"]) >= 1 for t in tasks)
    assert len({t["task_id"] for t in tasks}) == 100


# --- the signature a description ends with: the regex it replaces is the reference -------------------

OLD_SIGNATURE_RE = re.compile(r"(def\s+\w+\s*\(.*?\))\s*:?\s*$", re.S)
PIECES = ["def", "def ", " ", "\n", "\t", "\u00a0", "f", "price", "_n1", "é", "(", ")", ":", ",", "=", "->", "x", "."]
descriptions = st.lists(st.sampled_from(PIECES), max_size=30).map("".join) | st.text(max_size=40)


@given(descriptions)
def test_signature_is_what_the_regex_found(description):
    match = OLD_SIGNATURE_RE.search(description.strip())
    assert signature_of(description) == (match.group(1) if match else None)


def test_real_rows_keep_the_signature_the_regex_found():
    for line in (SAMPLE / "backend_test_first100.jsonl").read_text().splitlines():
        description = json.loads(line)["problem_description"]
        match = OLD_SIGNATURE_RE.search(description.strip())
        assert signature_of(description) == (match.group(1) if match else None)


@pytest.mark.parametrize("description", ["def a(" * 40_000, "def a(" * 40_000 + ")", "def " + "a" * 240_000 + ")"])
def test_a_crafted_description_is_read_in_linear_time(description):
    started = time.process_time()
    signature_of(description)
    assert time.process_time() - started < 2  # the regex took 29 s on the first; linear: milliseconds
