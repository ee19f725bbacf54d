"""The frontend task table and ColBench's official frontend JSONL: import, export, bad rows."""

from __future__ import annotations

import json

import polars as pl
import pytest

from sweetflow.core.inputs import ImportRowError
from sweetflow.frontend.page import page_from_json, to_html
from sweetflow.frontend.tasks import (
    FRONTEND_TASK_SCHEMA,
    generate_frontend_tasks,
    read_frontend_jsonl,
    to_frame,
    to_official_row,
)
from tests.support.project import SAMPLE

FRONTEND_SAMPLE = SAMPLE / "frontend_test_first30.jsonl"


def test_generated_table_round_trips_through_parquet(tmp_path):
    train, test = generate_frontend_tasks(6, 3, seed=1)
    frame = pl.concat([to_frame(train, "train"), to_frame(test, "test")])
    assert frame.schema == FRONTEND_TASK_SCHEMA
    frame.write_parquet(tmp_path / "tasks.parquet")
    back = pl.read_parquet(tmp_path / "tasks.parquet")
    assert back.equals(frame)
    for row in back.to_dicts():  # the spec is the page itself
        assert to_html(page_from_json(row["spec"])) == row["ground_truth"]


def test_official_rows_import_into_the_same_table_and_export_unchanged(tmp_path):
    tasks = read_frontend_jsonl(FRONTEND_SAMPLE)
    assert len(tasks) == 30 and all(t["spec"] is None for t in tasks)
    assert tasks[0]["site"] == "Healthcare Provider Website"
    assert to_frame(tasks, "test").schema == FRONTEND_TASK_SCHEMA
    rows = [json.dumps(to_official_row(t), ensure_ascii=False) + "\n" for t in tasks]
    (tmp_path / "out.jsonl").write_text("".join(rows), encoding="utf-8")
    original = [json.loads(line) for line in FRONTEND_SAMPLE.read_text(encoding="utf-8").splitlines() if line.strip()]
    exported = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]
    assert exported == original
    assert len(read_frontend_jsonl(FRONTEND_SAMPLE, limit=5)) == 5


@pytest.mark.parametrize(
    "line, field, problem",
    [
        ('{"problem_description": "A site", "ground_truth": 3}', "ground_truth", "non-empty string"),
        ('{"ground_truth": "<html></html>"}', "problem_description", "non-empty string"),
        ('{"problem_description": "A site", "ground_truth": "just words"}', "ground_truth", "no <html> tag"),
        ("[1, 2]", "(line)", "JSON object"),
        ('{"problem_description": "A site", ', "(line)", "not valid JSON"),
    ],
)
def test_bad_row_names_file_line_and_field(tmp_path, line, field, problem):
    path = tmp_path / "bad.jsonl"
    good = json.dumps({"problem_description": "Bakery: A warm design.", "ground_truth": "<html><body></body></html>"})
    path.write_text(f"{good}\n\n{line}\n")
    with pytest.raises(ImportRowError) as err:
        read_frontend_jsonl(path)
    message = str(err.value)
    assert str(path) in message and "line 3" in message and repr(field) in message and problem in message
