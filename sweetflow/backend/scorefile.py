"""`sweetflow score` on backend rows: each row's `task` has problem_description, ground_truth and
test_cases. References run once per distinct task (twice, to flag nondeterminism), answers once
each, all in the sandbox."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import polars as pl

from sweetflow.backend.sandbox.pool import Sandbox
from sweetflow.backend.scoring import check_references, score_answers, summarize
from sweetflow.backend.tasks.colbench import task_from_row
from sweetflow.errors import InputError
from sweetflow.inputs import ImportRowError, iter_jsonl
from sweetflow.params import SandboxParams, ScoringRules


def read_trajectories(path: Path | str) -> tuple[list[dict], list[str], list[int]]:
    """(task per row, answer per row, line number per row); a bad row names its line and field."""
    tasks, answers, lines = [], [], []
    for line, row in iter_jsonl(path):
        if not isinstance(row.get("task"), dict):
            raise ImportRowError(path, line, "task", "expected an object with the ColBench task")
        answer = row.get("answer")
        if not isinstance(answer, str):
            raise ImportRowError(path, line, "answer", f"expected a string, got {type(answer).__name__}")
        tasks.append(task_from_row(row["task"], path, line))
        answers.append(answer)
        lines.append(line)
    return tasks, answers, lines


def score_backend_file(path: Path | str, sandbox: SandboxParams, rules: ScoringRules) -> tuple[dict, pl.DataFrame]:
    """The summary of the file's rows and one scored row each (line, task, tests passed, success,
    status, each test's verdict, the reference's flags)."""
    tasks, answers, lines = read_trajectories(path)
    if not tasks:
        raise InputError(f"{path}: no rows to score")
    unique = {t["task_id"]: t for t in tasks}
    # References and answers never share a pool: a child inherits its worker's heap, where the
    # source of earlier jobs lingers, and an answer can read it (tests/unit/backend/test_memory_attack.py).
    with Sandbox(sandbox) as pool:
        checks = dict(zip(unique, check_references(list(unique.values()), pool, desc="references", rules=rules)))
    with Sandbox(sandbox) as pool:
        expected = [checks[t["task_id"]].expected for t in tasks]
        scores = score_answers(answers, expected, [t["test_cases"] for t in tasks], pool, desc="answers", rules=rules)
    summary = summarize(scores)
    summary["references_flagged"] = dict(Counter(f for c in checks.values() for f in c.flags))
    rows = pl.DataFrame(
        {
            "line": lines,
            "task_id": [t["task_id"] for t in tasks],
            "tests_passed": [s.tests_passed for s in scores],
            "success": [s.success for s in scores],
            "status": [s.status for s in scores],
            "passed": [s.passed for s in scores],
            "reference_flags": [checks[t["task_id"]].flags for t in tasks],
        }
    )
    return summary, rows
