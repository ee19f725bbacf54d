"""Labels of candidate design actions, for the critic's mechanism metrics (`critic_quality`).

A design action shows a page. It is good at its state when that page is closer to the target
(the domain's reward: rendered similarity) than the page the dialogue had before it: the last
page the agent showed, or at the first turn the page made from the description alone (the win
rate's reference, `reference_similarity` of the task table). Kinds:

- `closer`: the page renders and is closer to the target than the one before (good);
- `not_closer`: it renders and is no closer;
- `no_page`: the action shows no page, or one that does not render (it scores as no page).
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from sweetflow.core.tables import dialogues_by_trajectory
from sweetflow.dialogue import AGENT
from sweetflow.domain import Score
from sweetflow.frontend.simulators import page_snippet

GOOD_KINDS = ("closer",)


def previous_page(dialogue: list[dict], position: int) -> str | None:
    """The last page the agent showed before turn `position` of the dialogue, or None."""
    shown = (page_snippet(t["content"]) for t in reversed(dialogue[:position]) if t["role"] == AGENT)
    return next((page for page in shown if page is not None), None)


def label_candidates(
    candidates: pl.DataFrame,
    trajectories: pl.DataFrame,
    tasks: dict[str, dict],
    score: Callable[[list[dict], list[str]], list[Score]],
) -> pl.DataFrame:
    """Each candidate's kind and whether it is good (state_id, candidate, kind, good). `score(tasks,
    answers)` renders each answer's page and compares it with its task's target (`DomainRuntime.score`)."""
    dialogues = dialogues_by_trajectory(trajectories)
    rows = candidates.select("state_id", "task_id", "sample", "position", "candidate", "message").rows()
    before = [previous_page(dialogues[(task_id, sample)], position) for _, task_id, sample, position, _, _ in rows]
    # Every candidate's page and every state's page before it, rendered once each (score dedupes pages).
    answers = [message for *_, message in rows] + [page for page in before if page is not None]
    answer_tasks = [tasks[task_id] for _, task_id, *_ in rows]
    answer_tasks += [tasks[row[1]] for row, page in zip(rows, before) if page is not None]
    scores = iter(score(answer_tasks, answers)) if answers else iter([])
    mine = [next(scores) for _ in rows]
    labelled = []
    for (state_id, task_id, _, _, candidate, _), s, page in zip(rows, mine, before):
        baseline = next(scores).reward if page is not None else tasks[task_id]["reference_similarity"]
        kind = "no_page" if s.status != "rendered" else "closer" if s.reward > baseline else "not_closer"
        labelled.append((state_id, candidate, kind))
    frame = pl.DataFrame(
        labelled,
        schema={"state_id": pl.String, "candidate": candidates.schema["candidate"], "kind": pl.String},
        orient="row",
    )
    return frame.with_columns(good=pl.col("kind").is_in(GOOD_KINDS))
