"""ColBench's scoring rules, run for real in the sandbox."""

from __future__ import annotations

import json
import re
import time

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sweetflow.backend.params import ScoringRules
from sweetflow.backend.sandbox import plaindata
from sweetflow.backend.sandbox.pool import Sandbox
from sweetflow.backend.scoring import (
    OFFICIAL_FILTER,
    check_references,
    extract_code,
    passes_test,
    refused_by_filter,
    score_answers,
)
from sweetflow.backend.tasks.procedural import generate_tasks
from sweetflow.cli import main
from sweetflow.scorefile import OFFICIAL_RULES, score_file
from tests.support.params import backend_section, sandbox_params
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


# An answer that swaps the child's encoder for one that writes 1 MB of ints sharing a hash: decoding
# them cost the host 9 s of CPU, outside every timeout.
HASH_FLOOD = """
import json, sys
_flood = json.dumps({"__t": "set", "v": [k * (2**61 - 1) for k in range(1, 40_001)]}, separators=(",", ":"))
sys.modules["sweetflow.backend.sandbox.plaindata"].dumps = lambda value: _flood
def f(x):
    return {x}
"""


def test_an_output_crafted_to_flood_the_hosts_sets_fails_its_test_at_once(sandbox):
    (check,) = check_references([task("def f(x):\n    return {x}", ["f(1)"])], sandbox)
    started = time.process_time()
    (score,) = score_answers([HASH_FLOOD], [check.expected], [["f(1)"]], sandbox)
    assert score.passed == [False] and score.status == "ok"
    assert time.process_time() - started < 2  # the host's CPU: the sandbox's children are not counted


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


@given(st.sampled_from(OFFICIAL_FILTER), st.text(max_size=30), st.text(max_size=30))
def test_the_answer_filter_refuses_code_holding_any_banned_string(banned, before, after):
    assert refused_by_filter(before + banned + after)


def test_the_answer_filter_passes_code_without_banned_strings():
    assert not refused_by_filter("import math\ndef f(system, osmosis):\n    return math.exp(system)")


def test_filtered_answers_score_zero_without_running(sandbox):
    calls = ["f(1)", "f(2)"]
    (check,) = check_references([task("def f(x):\n    return x + 1", calls)], sandbox)
    answers = ["import sys\ndef f(x):\n    return x + 1", "def f(x):\n    return x + 1"]
    args = ([check.expected] * 2, [calls] * 2, sandbox)
    off = score_answers(answers, *args)
    on = score_answers(answers, *args, rules=ScoringRules(answer_filter=True))
    assert [s.success for s in off] == [True, True]
    assert [(s.success, s.status, s.passed) for s in on] == [
        (False, "filtered", [False, False]),
        (True, "ok", [True, True]),
    ]


@pytest.mark.parametrize(
    "answer, in_function",
    [
        ("import math\ndef f(x):\n    return math.floor(x) + 1", False),  # a top-level import
        ("def g(x):\n    return int(x)\ndef f(x):\n    return g(x) + 1", False),  # a top-level helper
        ("def f(x):\n    import math\n    return math.floor(x) + 1", True),
        ("def f(x):\n    def g(y):\n        return int(y)\n    return g(x) + 1", True),
    ],
)
def test_the_function_namespace_hides_top_level_names_from_the_answer(sandbox, answer, in_function):
    calls = ["f(1)", "f(2.5)", "f(-3)"]
    (check,) = check_references([task("def f(x):\n    return int(x) // 1 + 1 if x >= 0 else -3 + 1", calls)], sandbox)
    module = score_answers([answer], [check.expected], [calls], sandbox)[0]
    function = score_answers([answer], [check.expected], [calls], sandbox, rules=ScoringRules(function_namespace=True))[
        0
    ]
    assert module.success
    assert function.success is in_function
    if not in_function:
        assert function.failures["call_exception"] == len(calls)  # NameError in every call


def test_procedural_tasks_score_the_same_under_colbench_rules(tmp_path):
    """Every family's reference, exported in ColBench's shape, passes its own tests both ways."""
    _, test = generate_tasks(0, 2 * 28, seed=3)
    path = tmp_path / "references.jsonl"
    with path.open("w") as fh:
        for t in test:
            row = {
                "problem_description": t["problem_description"],
                "ground_truth": t["ground_truth"],
                "test_cases": {f"test{i + 1}": call for i, call in enumerate(t["test_cases"])},
            }
            fh.write(json.dumps({"task": row, "answer": t["ground_truth"]}) + "\n")
    ours = score_file(path, "backend", None, backend_section(workers=2))
    official = score_file(path, "backend", None, backend_section(workers=2, **OFFICIAL_RULES))
    assert ours["count"] == official["count"] == len(test) == 56
    assert ours["success_rate"] == official["success_rate"] == 1.0


def test_colbench_rules_on_real_rows(tmp_path):
    """The published references pass under both rules; an answer that moves the reference into a
    top-level helper passes only when its top-level names are visible (as in a module)."""
    rows = [json.loads(line) for line in (SAMPLE / "backend_test_first100.jsonl").read_text().splitlines()]
    path = tmp_path / "rows.jsonl"
    with path.open("w") as fh:
        for row in rows:
            name = re.match(r"\s*(\w+)\(", next(iter(row["test_cases"].values()))).group(1)
            helper = re.sub(rf"\bdef {name}\(", "def _inner(", row["ground_truth"], count=1)
            wrapped = f"{helper}\n\ndef {name}(*args, **kwargs):\n    return _inner(*args, **kwargs)\n"
            for answer in (row["ground_truth"], wrapped):
                fh.write(json.dumps({"task": row, "answer": answer}) + "\n")
    outs = {rules: tmp_path / f"{rules}.jsonl" for rules in ("params", "official")}
    for rules, out in outs.items():
        args = ["score", "--domain", "backend", str(path), "--out", str(out), "--workers", "2", "--rules", rules]
        assert main(args) == 0
    ours, official = (pl.read_ndjson(out)["success"].to_list() for out in outs.values())
    assert ours == [True] * 200
    assert official[0::2] == [True] * 100
    assert not any(official[1::2])
