"""Frontend design tasks: generation, the task table, and ColBench's official JSONL shape.

A task is ColBench's `{problem_description, ground_truth}` (the target page's HTML) plus, for
generated tasks, the page's spec (`sweetflow.frontend.page.Page` as JSON; null for imported rows)
and the site type. Tables are Parquet with the explicit schema `FRONTEND_TASK_SCHEMA`.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import polars as pl
from tqdm import tqdm

from sweetflow.core.inputs import FileLimits, Row, content_id, iter_jsonl
from sweetflow.frontend.page import page_to_json, to_html
from sweetflow.frontend.pages import generate_page

MAX_DUPLICATE_DRAWS = 1000  # duplicate pages in a row that mean the generator is used up

FRONTEND_TASK_SCHEMA = pl.Schema(
    {
        "task_id": pl.String,
        "site": pl.String,  # the site type: "Bakery" (generated), the description's prefix (imported)
        "problem_description": pl.String,
        "ground_truth": pl.String,  # the target page's HTML
        "spec": pl.String,  # the generated page as JSON (page_from_json); null for imported rows
        "split": pl.String,
    }
)

# Added by the tasks stage after rendering every target twice (sweetflow.frontend.checks).
CHECKED_FRONTEND_SCHEMA = pl.Schema(
    {
        **FRONTEND_TASK_SCHEMA,
        "target_png": pl.Binary,  # the target's screenshot, the one every answer is compared with; null if none
        "reference_similarity": pl.Float64,  # of the page made from the description alone (win rate's reference)
        "reference_design": pl.Float64,  # its `design` score (sweetflow.frontend.design)
        "flags": pl.List(pl.String),
    }
)


def generate_frontend_tasks(
    n_train: int, n_test: int, seed: int, progress: bool = False, test_seed: int | None = None
) -> tuple[list[dict], list[dict]]:
    """(train, test) task records, deterministic for a seed, with no page twice in or across splits.
    The test split is drawn first from its own stream, so it does not depend on n_train. `test_seed`
    (default `seed`) draws another test split, distinct from the default one, beside the same training pages."""
    seen: set[str] = set()
    redraw = test_seed is not None and test_seed != seed
    with tqdm(total=n_train + n_test * (1 + redraw), desc="generating frontend tasks", disable=not progress) as bar:
        test = _generate_split(n_test, random.Random(f"{seed}:frontend:test"), seen, bar.update)
        train = _generate_split(n_train, random.Random(f"{seed}:frontend:train"), seen, bar.update)
        if redraw:  # last, so that the training pages stay exactly as they are
            test = _generate_split(n_test, random.Random(f"{test_seed}:frontend:test"), seen, bar.update)
    return train, test


def _generate_split(n: int, rng: random.Random, seen: set[str], advance) -> list[dict]:
    tasks = []
    duplicates = 0
    while len(tasks) < n:
        drawn = generate_page(rng)
        html = to_html(drawn.page)
        if html in seen:
            duplicates += 1
            if duplicates > MAX_DUPLICATE_DRAWS:
                raise RuntimeError(f"the page generator is used up after {len(seen)} distinct pages")
            continue
        duplicates = 0
        seen.add(html)
        tasks.append(
            {
                "task_id": content_id("frontend", html),
                "site": drawn.site.kind,
                "problem_description": drawn.description,
                "ground_truth": html,
                "spec": page_to_json(drawn.page),
            }
        )
        advance()
    return tasks


def to_frame(records: list[dict], split: str, schema: pl.Schema = FRONTEND_TASK_SCHEMA) -> pl.DataFrame:
    rows = [{**{k: r.get(k) for k in schema}, "split": split} for r in records]
    return pl.DataFrame(rows, schema=schema, orient="row")


# --- ColBench's JSONL ----------------------------------------------------------------------------

HTML_TAG = re.compile(r"<html\b", re.IGNORECASE)


def task_from_row(row: dict, path: Path | str = "<row>", line: int = 0) -> dict:
    """One official frontend row as a task record (no spec; the site is the description's prefix)."""
    fields = Row(row, path, line)
    description = fields.text("problem_description")
    page = fields.text("ground_truth")
    if not HTML_TAG.search(page):
        raise fields.error("ground_truth", f"expected an HTML page (no <html> tag), got {page!r:.80}")
    site, colon, _ = description.partition(":")
    return {
        "task_id": content_id("colbench", description, page),
        "site": site.strip() if colon and len(site) <= 80 else "colbench",
        "problem_description": description,
        "ground_truth": page,
        "spec": None,
    }


def read_frontend_jsonl(path: Path | str, limit: int | None = None, bounds: FileLimits | None = None) -> list[dict]:
    return [task_from_row(row, path, line) for line, row in iter_jsonl(path, limit, bounds)]


def to_official_row(task: dict) -> dict:
    return {"problem_description": task["problem_description"], "ground_truth": task["ground_truth"]}
