"""The page generator: deterministic, distinct, ColBench-shaped pages that read back as drawn."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sweetflow.frontend.outline import read_page
from sweetflow.frontend.page import TAILWIND_CSS, page_from_json, page_to_json, to_html
from sweetflow.frontend.pages import FAMILIES, generate_page
from sweetflow.frontend.tasks import generate_frontend_tasks

CDN_LINK = f'<link href="{TAILWIND_CSS}" rel="stylesheet">'
seeds = st.integers(min_value=0, max_value=2**32)


def test_same_seed_same_tasks_and_test_split_does_not_depend_on_train_size():
    train, test = generate_frontend_tasks(30, 10, seed=4)
    assert (train, test) == generate_frontend_tasks(30, 10, seed=4)
    assert generate_frontend_tasks(5, 10, seed=4)[1] == test
    assert generate_frontend_tasks(30, 10, seed=5)[1] != test


def test_another_test_seed_draws_fresh_pages_beside_the_same_training_pages():
    train, test = generate_frontend_tasks(30, 10, seed=4)
    same_train, other_test = generate_frontend_tasks(30, 10, seed=4, test_seed=9)
    assert same_train == train
    assert not {t["ground_truth"] for t in other_test} & {t["ground_truth"] for t in test + train}
    assert generate_frontend_tasks(30, 10, seed=4, test_seed=4) == (train, test)


def test_pages_are_distinct_within_and_across_splits():
    train, test = generate_frontend_tasks(1000, 100, seed=0)
    pages = [t["ground_truth"] for t in train + test]
    assert len(set(pages)) == len(pages) == 1100
    assert len({t["task_id"] for t in train + test}) == 1100


@pytest.mark.slow
def test_capacity_10000_train_and_500_test_distinct_pages():
    train, test = generate_frontend_tasks(10_000, 500, seed=0)
    assert len({t["ground_truth"] for t in train + test}) == 10_500


@settings(max_examples=200, deadline=None)
@given(seeds)
def test_every_page_links_tailwind_uses_picsum_and_reads_back_exactly(seed):
    drawn = generate_page(random.Random(seed))
    html = to_html(drawn.page)
    assert html.startswith(f"<html>\n{CDN_LINK}\n<body ") and html.rstrip().endswith("</body>\n</html>")
    assert all(src.startswith("https://picsum.photos/id/48/") for src in re.findall(r'src="([^"]+)"', html))
    assert read_page(html) == drawn.page
    assert page_from_json(page_to_json(drawn.page)) == drawn.page


@settings(max_examples=200, deadline=None)
@given(seeds)
def test_only_colours_the_cdn_build_ships(seed):
    html = to_html(generate_page(random.Random(seed)).page)
    families = set(re.findall(r"\b(?:bg|text)-([a-z]+)-\d+\b", html))
    assert families <= {*FAMILIES, "gray"}


@settings(max_examples=200, deadline=None)
@given(seeds)
def test_description_names_sections_loosely_never_colours_or_exact_texts(seed):
    drawn = generate_page(random.Random(seed))
    description = drawn.description
    assert description.startswith(drawn.site.kind) and ": A" in description
    words = set(re.findall(r"[a-z]+", description.lower()))
    assert not words & {*FAMILIES, "gray", "white", "black"}
    for block in drawn.page.blocks:
        exact = [
            block.heading if block.kind in ("header", "hero", "cta") else "",
            *block.paragraphs,
            *(b.label for b in block.buttons),
            *(i.text for i in block.items),
        ]
        assert not any(text and text in description for text in exact)
