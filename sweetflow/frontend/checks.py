"""Checking frontend targets when tasks are made, as the backend runs every reference twice.

Each target page is rendered twice, in two separate passes: a target with no screenshot (it timed
out or crashed the renderer) or with two different ones (its rendering is not deterministic) is
flagged and counted, never silently dropped; the first screenshot is the one answers are compared
with. The page made from the description alone (the `no_ask` designer's) is rendered too: its
similarity and `design` score are each task's references for win rates.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sweetflow.frontend.design import design_scores
from sweetflow.frontend.page import to_html
from sweetflow.frontend.plain import page_from_description
from sweetflow.frontend.render import RenderPool
from sweetflow.frontend.similarity import Similarity

FLAGS = ("render_failed", "nondeterministic")


@dataclass
class TargetCheck:
    target_png: bytes | None
    reference_similarity: float
    reference_design: float
    flags: list[str] = field(default_factory=list)


def reference_page(description: str) -> str:
    """The page a designer makes from the description alone: the win rate's reference."""
    return to_html(page_from_description(description))


def check_targets(
    tasks: list[dict], pool: RenderPool, similarity: Similarity, desc: str = "targets"
) -> list[TargetCheck]:
    targets = [t["ground_truth"] for t in tasks]
    first = pool.render_many(targets, desc=f"{desc} (1st)")
    second = pool.render_many(targets, desc=f"{desc} (2nd)")
    pages = [reference_page(t["problem_description"]) for t in tasks]
    references = pool.render_many(pages, desc=f"{desc} (reference)")
    shown = [i for i, png in enumerate(first) if png is not None]
    answers, shots = [references[i] for i in shown], [first[i] for i in shown]
    scores = dict(zip(shown, similarity(answers, shots)))
    designs = dict(zip(shown, design_scores(answers, shots, [pages[i] for i in shown], [targets[i] for i in shown])))
    checks = []
    for i, (a, b) in enumerate(zip(first, second)):
        flags = ["render_failed"] if a is None or b is None else ["nondeterministic"] if a != b else []
        checks.append(TargetCheck(a, scores.get(i, 0.0), designs.get(i, 0.0), flags))
    return checks
