"""The `design` metric: its terms on drawn texts and section lists, its properties on real rendered tasks,
and how evaluations record and summarize it beside the similarity."""

from __future__ import annotations

from collections import Counter

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sweetflow.core.tables import TRAJECTORY_SCHEMA, to_frame
from sweetflow.frontend.design import (
    WEIGHTS,
    design_from,
    layout_similarity,
    page_sections,
    page_words,
    text_similarity,
)
from sweetflow.frontend.design_check import ADVERSARIES, check, choose_weights, reference_beats
from sweetflow.frontend.domain import DOMAIN
from sweetflow.frontend.tasks import generate_frontend_tasks
from tests.support.project import ROOT

words = st.lists(st.sampled_from(["home", "about", "bakery", "fresh", "bread", "contact", "2024"]), max_size=12)
kinds = st.lists(st.sampled_from(["header", "nav", "hero", "columns", "cards", "text", "cta", "footer"]), max_size=8)


@settings(max_examples=40, deadline=None)
@given(a=words, b=words)
def test_text_similarity_is_a_symmetric_f1(a, b):
    ca, cb = Counter(a), Counter(b)
    assert text_similarity(ca, cb) == text_similarity(cb, ca)
    assert text_similarity(ca, ca) == 1.0
    assert 0.0 <= text_similarity(ca, cb) <= 1.0
    if a and not b:
        assert text_similarity(ca, cb) == 0.0  # a page without words shares none


@settings(max_examples=40, deadline=None)
@given(a=kinds, b=kinds)
def test_layout_similarity_matches_sections_in_order(a, b):
    ta, tb = tuple(a), tuple(b)
    assert layout_similarity(ta, ta) == 1.0
    assert 0.0 <= layout_similarity(ta, tb) <= 1.0
    if a and not b:
        assert layout_similarity(ta, tb) == 0.0  # a page without sections matches none
    if len(set(a)) == len(a) >= 2:
        assert layout_similarity(ta[::-1], ta) < 1.0  # the same sections in another order


def test_a_page_reads_as_its_sections_and_words():
    _, (task,) = generate_frontend_tasks(0, 1, seed=5)
    page = task["ground_truth"]
    assert page_sections(page)[0] in ("header", "nav") and len(page_sections(page)) >= 3
    assert design_from(1.0, page, page) == 1.0  # the target itself
    for nothing in (None, "<html><body></body></html>", "<html><body style='background:gray'></body></html>"):
        assert design_from(1.0, nothing, page) == pytest.approx(WEIGHTS["pixels"])  # at best, its pixels' share


def test_page_words_are_the_shown_text():
    html = """<html><head><title>Hidden title</title><style>p { color: red }</style></head>
<body><h1>Fresh Bread</h1><script>const secret = "words";</script><p>Fresh &amp; warm</p></body></html>"""
    assert page_words(html) == Counter({"fresh": 2, "bread": 1, "warm": 1})
    assert page_words(None) == Counter()


def test_the_description_page_beats_pages_that_do_no_part_of_the_task(monkeypatch):
    """A few real tasks rendered: the target scores 1, and the description's page beats a blank,
    a gray and a one-colour page on every one (the full table: docs/benchmark.md)."""
    monkeypatch.chdir(ROOT)  # the renderer's Tailwind path is relative to the project
    result = check(4, seed=11, params_file=ROOT / "params.yaml")
    design = result["metrics"]["design"]
    assert design["least_target_score"] == pytest.approx(1.0)
    assert [design["reference_beats"][a] for a in ADVERSARIES[:3]] == [1.0, 1.0, 1.0]
    assert result["metrics"]["pixels"]["least_target_score"] == pytest.approx(1.0)
    # The saved terms give the table's figures again, as `--choose` reads them.
    assert reference_beats([result], WEIGHTS) == design["reference_beats"]


terms = st.fixed_dictionaries({name: st.floats(0, 1) for name in WEIGHTS})
checks = st.lists(
    st.integers(1, 6).flatmap(
        lambda n: st.fixed_dictionaries(
            {
                "tasks": st.just(n),
                "terms": st.fixed_dictionaries(
                    {page: st.lists(terms, min_size=n, max_size=n) for page in ("description's page", *ADVERSARIES)}
                ),
            }
        )
    ),
    min_size=1,
    max_size=2,
)


@settings(max_examples=30, deadline=None)
@given(checks=checks)
def test_the_chosen_weights_have_the_highest_least_share(checks):
    ranked = choose_weights(checks)
    assert len(ranked) == 28  # twelfths, each term at least 2/12
    for weights, beats in ranked:
        assert sum(weights.values()) == pytest.approx(1.0) and min(weights.values()) >= 2 / 12 - 1e-12
        assert beats == reference_beats(checks, weights)
    assert min(ranked[0][1].values()) == max(min(beats.values()) for _, beats in ranked)


def test_when_only_layout_tells_the_pages_apart_the_choice_weighs_it_most():
    page = lambda pixels, text, layout: {"pixels": pixels, "text": text, "layout": layout}  # noqa: E731
    # Another task's target looks and reads like the target; the description's page has only its sections,
    # and beats it only with layout at 8/12 (1 - 0.4 against 1 and 1 at 2/12 each; at 7/12 it loses).
    result = {
        "tasks": 1,
        "terms": {
            "description's page": [page(0.0, 0.0, 1.0)],
            **{a: [page(0.0, 0.0, 0.0)] for a in ADVERSARIES[:3]},
            "another task's target": [page(1.0, 1.0, 0.4)],
        },
    }
    weights, beats = choose_weights([result])[0]
    assert weights == {"pixels": 2 / 12, "text": 2 / 12, "layout": 8 / 12} and min(beats.values()) == 1.0


def test_trajectories_keep_their_columns_unless_a_domain_adds_some():
    record = {
        "task_id": "t",
        "sample": 0,
        "seed": 0,
        "dialogue": [],
        "answer": "",
        "answered": True,
        "ended_by": "answer",
        "n_turns": 1,
        "reward": 0.5,
        "success": None,
        "score_status": "rendered",
        "failure": None,
        "test_outputs": None,
    }
    assert to_frame([record]).schema == TRAJECTORY_SCHEMA  # the backend's table is as it was
    frame = to_frame([{**record, "design": 0.4, "win": 1.0}])
    assert list(frame.schema) == [*TRAJECTORY_SCHEMA, "design", "win"] and frame["design"].dtype == pl.Float64


def test_summary_gives_both_metrics_and_the_chosen_win_rate():
    tasks = [
        {"task_id": "a", "reference_similarity": 0.5, "reference_design": 0.3},
        {"task_id": "b", "reference_similarity": 0.6, "reference_design": 0.4},
    ]
    # Task a: above the reference by similarity, below by design; task b: the other way round.
    frame = pl.DataFrame({"task_id": ["a", "b"], "reward": [0.7, 0.2], "design": [0.1, 0.9], "win": [0.0, 1.0]})
    summary = DOMAIN.summarize(frame, tasks)
    assert summary["similarity"] == pytest.approx(0.45) and summary["design"] == pytest.approx(0.5)
    assert summary["similarity_win_rate"] == 0.5 and summary["design_win_rate"] == 0.5
    assert summary["win_rate"] == 0.5  # the `win` column, as the episodes were scored
    imported = DOMAIN.summarize(frame.drop("design", "win"), tasks)  # a file's rewards, no design
    assert imported == {"similarity": pytest.approx(0.45), "win_rate": 0.5}
    assert DOMAIN.summarize(frame.head(1), tasks)["design_win_rate"] == 0.0
