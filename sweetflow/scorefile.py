"""Score a JSONL of trajectories made elsewhere, in ColBench's output shape.

Each line is an object with `task` (a ColBench task: problem_description, ground_truth, test_cases)
and `answer` (the agent's final answer). References run once per distinct task (twice, to flag
nondeterminism), answers once each, all in the sandbox.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import polars as pl

from sweetflow.sandbox import Sandbox, SandboxParams
from sweetflow.scoring import check_references, score_answers, summarize
from sweetflow.tasks.colbench import ImportRowError, iter_jsonl, task_from_row


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


def score_file(path: Path | str, domain: str, out: Path | None = None, workers: int = 0) -> dict:
    if domain != "backend":
        raise ValueError(f"domain {domain!r} is not supported yet")
    tasks, answers, lines = read_trajectories(path)
    unique = {t["task_id"]: t for t in tasks}
    with Sandbox(SandboxParams(workers=workers)) as sandbox:
        checks = dict(zip(unique, check_references(list(unique.values()), sandbox, desc="references")))
        scores = score_answers(
            answers,
            [checks[t["task_id"]].expected for t in tasks],
            [t["test_cases"] for t in tasks],
            sandbox,
            desc="answers",
        )
    summary = summarize(scores)
    summary["references_flagged"] = dict(Counter(f for c in checks.values() for f in c.flags))
    if out is not None:
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
        if Path(out).suffix == ".parquet":
            rows.write_parquet(out)
        else:
            rows.write_ndjson(out)
    return summary
