"""`sweetflow score` on backend rows: each row's `task` has problem_description, ground_truth and
test_cases. Answers run once each in the sandbox. Each distinct task's reference outputs come from a
checked task table when one holds the task (`stored`: the `tasks` stage ran the reference twice, in
the sandbox, when it made the task); otherwise the reference runs here, twice, to flag
nondeterminism, in a pool of its own."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import polars as pl

from sweetflow.backend.params import SandboxParams, ScoringRules
from sweetflow.backend.sandbox.pool import Sandbox
from sweetflow.backend.scoring import ReferenceCheck, check_references, score_answers, summarize
from sweetflow.backend.tasks.colbench import task_from_row
from sweetflow.core.errors import InputError
from sweetflow.core.inputs import FileLimits, ImportRowError, iter_jsonl


def read_trajectories(path: Path | str, limits: FileLimits | None = None) -> tuple[list[dict], list[str], list[int]]:
    """(task per row, answer per row, line number per row); a bad row names its line and field."""
    tasks, answers, lines = [], [], []
    for line, row in iter_jsonl(path, bounds=limits):
        if not isinstance(row.get("task"), dict):
            raise ImportRowError(path, line, "task", "expected an object with the ColBench task")
        answer = row.get("answer")
        if not isinstance(answer, str):
            raise ImportRowError(path, line, "answer", f"expected a string, got {type(answer).__name__}")
        tasks.append(task_from_row(row["task"], path, line))
        answers.append(answer)
        lines.append(line)
    return tasks, answers, lines


def score_backend_file(
    path: Path | str,
    sandbox: SandboxParams,
    rules: ScoringRules,
    stored: dict[str, ReferenceCheck],
    limits: FileLimits | None = None,
) -> tuple[dict, pl.DataFrame]:
    """The summary of the file's rows and one scored row each (line, task, tests passed, success,
    status, each test's verdict, the reference's flags)."""
    tasks, answers, lines = read_trajectories(path, limits)
    if not tasks:
        raise InputError(f"{path}: no rows to score")
    unique = {t["task_id"]: t for t in tasks}
    checks = {task_id: stored[task_id] for task_id in unique if task_id in stored}
    unchecked = [t for task_id, t in unique.items() if task_id not in checks]
    # References and answers never share a pool (defence in depth: each answer's child is forked from
    # a template process that never held a job's text).
    if unchecked:
        with Sandbox(sandbox) as pool:
            ran = check_references(unchecked, pool, desc="references", rules=rules)
        checks.update(zip((t["task_id"] for t in unchecked), ran))
    with Sandbox(sandbox) as pool:
        expected = [checks[t["task_id"]].expected for t in tasks]
        scores = score_answers(answers, expected, [t["test_cases"] for t in tasks], pool, desc="answers", rules=rules)
    summary = summarize(scores)
    summary["references_flagged"] = dict(Counter(f for c in checks.values() for f in c.flags))
    summary["references_run"] = len(unchecked)  # the rest came from the task table
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
