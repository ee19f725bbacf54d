"""`sweetflow score` on frontend rows: each row's `task` has problem_description and ground_truth (an
HTML page). The answer's first `<html>…</html>` snippet (text around it is ignored) and the ground
truth are rendered offline, each distinct page once, and compared (sweetflow.frontend.similarity).
An answer without a snippet, or whose page times out or crashes, scores 0; a row whose target fails
to render is not scored and is counted apart."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from sweetflow.core.errors import InputError
from sweetflow.core.inputs import FileLimits, ImportRowError, iter_jsonl
from sweetflow.frontend.params import RenderParams, SimilarityParams
from sweetflow.frontend.render import RenderPool
from sweetflow.frontend.scoring import score_pages
from sweetflow.frontend.similarity import Similarity
from sweetflow.frontend.simulators import page_snippet


def read_frontend_trajectories(
    path: Path | str, limits: FileLimits | None = None
) -> tuple[list[str], list[str], list[int]]:
    """(target page per row, answer per row, line number per row); a bad row names its line and field."""
    targets, answers, lines = [], [], []
    for line, row in iter_jsonl(path, bounds=limits):
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
    path: Path | str, render: RenderParams, similarity: SimilarityParams, limits: FileLimits | None = None
) -> tuple[dict, pl.DataFrame]:
    """The summary of the file's rows and one scored row each (line, similarity, the design metric,
    the answer's and the target's render status)."""
    targets, answers, lines = read_frontend_trajectories(path, limits)
    if not targets:
        raise InputError(f"{path}: no rows to score")
    scorer = Similarity(similarity)  # before rendering: a bad CLIP checkpoint fails at once
    with RenderPool(render) as pool:
        distinct = list(dict.fromkeys(targets))
        target_shots = dict(zip(distinct, pool.render_many(distinct, desc="rendering targets")))
        scored = [i for i, t in enumerate(targets) if target_shots[t] is not None]
        scores = score_pages(
            [answers[i] for i in scored],
            [target_shots[targets[i]] for i in scored],
            [targets[i] for i in scored],
            pool,
            scorer,
        )
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
        "render_failures": {
            "answers": answer_status.count("render_failed"),
            "targets": target_status.count("render_failed"),
        },
    }
    rows = pl.DataFrame(
        {
            "line": lines,
            "similarity": similarities,
            "design": designs,
            "answer_status": answer_status,
            "target_status": target_status,
        },
        schema={
            "line": pl.Int64,
            "similarity": pl.Float64,
            "design": pl.Float64,
            "answer_status": pl.Utf8,
            "target_status": pl.Utf8,
        },
    )
    return summary, rows
