"""Frontend scoring: an answer's page against its target's screenshot (ColBench's frontend reward),
and against the target's screenshot and words (the `design` metric, `sweetflow.frontend.design`).

The page an answer shows is found as the simulator finds it (`page_snippet`: the last `<html`
up to `</html>` or the end); each distinct page is rendered once; an answer with no page, or whose
page times out or crashes the renderer, scores 0 with its status saying why.
"""

from __future__ import annotations

from dataclasses import dataclass

from sweetflow.frontend.design import design_scores
from sweetflow.frontend.render import RenderPool
from sweetflow.frontend.similarity import Similarity
from sweetflow.frontend.simulators import page_snippet

STATUSES = ("rendered", "no_html", "render_failed", "no_target")


@dataclass
class PageScore:
    similarity: float
    design: float
    status: str  # one of STATUSES


def score_pages(
    answers: list[str], targets: list[bytes | None], target_pages: list[str], pool: RenderPool, similarity: Similarity
) -> list[PageScore]:
    """One score per (answer, target screenshot); a task whose target has no screenshot (flagged
    when the tasks were made) scores 0 for every answer, as a broken reference does in the backend."""
    pages = [page_snippet(answer) for answer in answers]
    distinct = list(dict.fromkeys(p for p, t in zip(pages, targets) if p is not None and t is not None))
    shots = dict(zip(distinct, pool.render_many(distinct, desc=None)))
    scored = [i for i, t in enumerate(targets) if t is not None]
    answer_shots, target_shots = [shots.get(pages[i]) for i in scored], [targets[i] for i in scored]
    values = dict(zip(scored, similarity(answer_shots, target_shots)))
    designs = dict(
        zip(
            scored,
            design_scores(answer_shots, target_shots, [pages[i] for i in scored], [target_pages[i] for i in scored]),
        )
    )
    out = []
    for i, page in enumerate(pages):
        if targets[i] is None:
            out.append(PageScore(0.0, 0.0, "no_target"))
        else:
            status = "no_html" if page is None else "render_failed" if shots[page] is None else "rendered"
            out.append(PageScore(values[i], designs[i], status))
    return out
