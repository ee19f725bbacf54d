"""Score a JSONL of trajectories made elsewhere, in ColBench's output shape.

Each line is an object with `task` (a ColBench task) and `answer` (the agent's final answer).

Backend: the task has problem_description, ground_truth, test_cases. References run once per
distinct task (twice, to flag nondeterminism), answers once each, all in the sandbox.

Frontend: the task has problem_description and ground_truth (an HTML page). The answer's first
`<html>…</html>` snippet (text around it is ignored) and the ground truth are rendered offline,
each distinct page once, and compared (sweetflow.frontend.similarity). An answer without a snippet,
or whose page times out or crashes, scores 0; a row whose target fails to render is not scored and
is counted apart.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import polars as pl

from sweetflow.backend.sandbox.pool import Sandbox, SandboxParams
from sweetflow.backend.scoring import check_references, score_answers, summarize
from sweetflow.backend.tasks.colbench import task_from_row
from sweetflow.errors import InputError
from sweetflow.inputs import ImportRowError, iter_jsonl
from sweetflow.params import RenderParams, ScoringRules, SimilarityParams


def check_writable(out: Path) -> None:
    """Fail before any scoring on an `out` that cannot be written (a missing or read-only directory,
    a directory in its place): scoring can take an hour, and its results would be lost at the end."""
    existed = out.exists()
    try:
        open(out, "ab").close()
    except OSError as e:
        raise InputError(f"{out}: cannot be written ({e.strerror})") from None
    if not existed:
        out.unlink()


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


def score_file(
    path: Path | str,
    domain: str,
    out: Path | None,
    sandbox: SandboxParams,
    render: RenderParams,
    similarity: SimilarityParams,
    rules: ScoringRules = ScoringRules(),
) -> dict:
    """Score the file's rows: in the sandbox (backend), or rendered and compared (frontend)."""
    if out is not None:
        check_writable(out)
    if domain == "frontend":
        return score_frontend_file(path, out, render, similarity)
    if domain != "backend":
        raise ValueError(f"unknown domain {domain!r}; expected 'backend' or 'frontend'")
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


def read_frontend_trajectories(path: Path | str) -> tuple[list[str], list[str], list[int]]:
    """(target page per row, answer per row, line number per row); a bad row names its line and field."""
    from sweetflow.frontend.simulators import page_snippet

    targets, answers, lines = [], [], []
    for line, row in iter_jsonl(path):
        task = row.get("task")
        if not isinstance(task, dict):
            raise ImportRowError(path, line, "task", "expected an object with the ColBench frontend task")
        for field in ("problem_description", "ground_truth"):
            value = task.get(field)
            if not isinstance(value, str) or not value.strip():
                raise ImportRowError(path, line, f"task.{field}", f"expected a non-empty string, got {value!r:.80}")
        target = page_snippet(task["ground_truth"])
        if target is None:
            raise ImportRowError(path, line, "task.ground_truth", "no <html> page in it")
        answer = row.get("answer")
        if not isinstance(answer, str):
            raise ImportRowError(path, line, "answer", f"expected a string, got {type(answer).__name__}")
        targets.append(target)
        answers.append(answer)
        lines.append(line)
    return targets, answers, lines


def score_frontend_file(
    path: Path | str, out: Path | None, render: RenderParams, similarity: SimilarityParams
) -> dict:
    from sweetflow.frontend.render import RenderPool
    from sweetflow.frontend.scoring import score_pages
    from sweetflow.frontend.similarity import Similarity

    targets, answers, lines = read_frontend_trajectories(path)
    if not targets:
        raise InputError(f"{path}: no rows to score")
    scorer = Similarity(similarity)  # before rendering: a bad CLIP checkpoint fails at once
    with RenderPool(render) as pool:
        distinct = list(dict.fromkeys(targets))
        target_shots = dict(zip(distinct, pool.render_many(distinct, desc="rendering targets")))
        scored = [i for i, t in enumerate(targets) if target_shots[t] is not None]
        scores = score_pages([answers[i] for i in scored], [target_shots[targets[i]] for i in scored],
                             [targets[i] for i in scored], pool, scorer)  # fmt: skip
    similarities: list[float | None] = [None] * len(targets)
    designs: list[float | None] = [None] * len(targets)
    answer_status = ["not_scored"] * len(targets)
    for i, score in zip(scored, scores):
        similarities[i], designs[i], answer_status[i] = score.similarity, score.design, score.status
    target_status = ["rendered" if target_shots[t] is not None else "render_failed" for t in targets]
    summary = {
        "metric": similarity.metric,
        "similarity": sum(s.similarity for s in scores) / len(scores) if scores else 0.0,
        "design": sum(s.design for s in scores) / len(scores) if scores else 0.0,
        "count": len(scores),
        "no_html": answer_status.count("no_html"),
        "render_failures": {"answers": answer_status.count("render_failed"), "targets": target_status.count("render_failed")},
    }
    if out is not None:
        rows = pl.DataFrame(
            {"line": lines, "similarity": similarities, "design": designs, "answer_status": answer_status,
             "target_status": target_status},
            schema={"line": pl.Int64, "similarity": pl.Float64, "design": pl.Float64, "answer_status": pl.Utf8,
                    "target_status": pl.Utf8},  # fmt: skip
        )
        if Path(out).suffix == ".parquet":
            rows.write_parquet(out)
        else:
            rows.write_ndjson(out)
    return summary
