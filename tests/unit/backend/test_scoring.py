"""ColBench's scoring rules, run for real in the sandbox."""

from __future__ import annotations

import json

import polars as pl
import pytest

from sweetflow.backend.sandbox import plaindata
from sweetflow.backend.sandbox.pool import Sandbox
from sweetflow.backend.scoring import check_references, extract_code, passes_test, score_answers
from sweetflow.cli import main
from tests.support.params import sandbox_params
from tests.support.project import SAMPLE


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(sandbox_params(workers=2, task_timeout_s=10)) as sb:
        yield sb


def task(code: str, calls: list[str]) -> dict:
    return {"ground_truth": code, "test_cases": calls}


@pytest.mark.parametrize(
    "reference, output, passes",
    [
        (1, 1, True),
        (1, 1.0, True),  # Python's == decides, as in ColBench
        ([1, 2], (1, 2), False),
        ({"a": [1, (2, 3)]}, {"a": [1, (2, 3)]}, True),
        (None, None, False),  # a None reference never counts
        (float("nan"), float("nan"), False),
        ("x", "x ", False),
    ],
)
def test_test_passes_follows_colbench(reference, output, passes):
    assert passes_test(plaindata.dumps(reference), plaindata.dumps(output)) is passes


def test_missing_output_or_malformed_text_fails():
    assert not passes_test(plaindata.dumps(1), None)
    assert not passes_test(plaindata.dumps(1), '{"__t": "nonsense"}')


def test_the_four_known_exception_kinds_are_flagged(sandbox):
    calls = [f"f({i})" for i in range(10)]
    tasks = [
        task("from bs4 import BeautifulSoup\ndef f(x):\n    return x", calls),
        task("import random\ndef f(x):\n    return random.random() + x", calls),
        task("def f(x):\n    # needs: sudo apt-get install nothing\n    return x * 2", calls),
        task("def f(x):\n    return float('nan') if x < 2 else x", calls),
        task("def f(x):\n    return x + 1", calls),
    ]
    checks = check_references(tasks, sandbox)
    assert "reference_error" in checks[0].flags and checks[0].reference_passes == 0
    assert "nondeterministic" in checks[1].flags and checks[1].reference_passes == 0
    assert checks[2].flags == ["official_filter"] and checks[2].reference_passes == 10
    assert checks[3].flags == ["self_unequal"] and checks[3].reference_passes == 8
    assert checks[4].flags == [] and checks[4].reference_passes == 10


def test_none_returning_and_raising_references_are_flagged(sandbox):
    calls = ["f(1)", "f(-1)"]
    (none, raising) = check_references(
        [task("def f(x):\n    return None", calls), task("def f(x):\n    return 1 // (x + 1)", calls)], sandbox
    )
    assert none.flags == ["none_output"] and none.reference_passes == 0
    assert raising.flags == ["call_error"] and raising.reference_passes == 1


def test_wrong_answers_score_the_fraction_of_tests_they_pass(sandbox):
    calls = [f"f({i})" for i in range(10)]
    (check,) = check_references([task("def f(x):\n    return x * x", calls)], sandbox)
    answers = [
        "def f(x):\n    return x * x",
        "def f(x):\n    return x * x if x < 5 else 0",
        "Here you go:\n```python\ndef f(x):\n    return x ** 2\n```\nEnjoy!",
        "def f(x) return",
    ]
    scores = score_answers(answers, [check.expected] * 4, [calls] * 4, sandbox)
    assert [s.tests_passed for s in scores] == [1.0, 0.5, 1.0, 0.0]
    assert [s.success for s in scores] == [True, False, True, False]
    assert scores[3].status == "compile_error"


def test_extract_code_takes_the_first_fenced_block():
    assert extract_code("a\n```py\nx = 1\n```\n```python\ny\n```") == "x = 1\n"
    assert extract_code("def f(): pass") == "def f(): pass"


def test_score_command_on_real_rows(tmp_path, capsys):
    rows = [json.loads(line) for line in (SAMPLE / "backend_test_first100.jsonl").read_text().splitlines()]
    trajectories = tmp_path / "traj.jsonl"
    with trajectories.open("w") as fh:
        for i, row in enumerate(rows):
            answer = row["ground_truth"] if i % 4 else "def nothing():\n    pass"
            fh.write(json.dumps({"task": row, "answer": answer}) + "\n")
    out = tmp_path / "scores.jsonl"
    assert main(["score", "--domain", "backend", str(trajectories), "--out", str(out), "--workers", "2"]) == 0
    summary = json.loads(capsys.readouterr().out)
    # The first 100 published rows hold none of the 4 known exceptions: every reference passes.
    assert summary["count"] == 100 and summary["references_flagged"] == {}
    assert summary["success_rate"] == pytest.approx(0.75)
    assert summary["sandbox_failures"]["call_exception"] > 0
    per_row = pl.read_ndjson(out)
    assert per_row.height == 100 and per_row["success"].sum() == 75


def test_score_command_names_a_bad_row(tmp_path, capsys):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"task": {"problem_description": "x"}, "answer": "y"}) + "\n")
    assert main(["score", "--domain", "backend", str(path)]) == 2
    assert "line 1: field 'ground_truth'" in capsys.readouterr().out
