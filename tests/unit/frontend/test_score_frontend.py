"""`sweetflow score --domain frontend`: real rows rendered offline and scored, and bad rows named."""

from __future__ import annotations

import json

import polars as pl
import pytest

from sweetflow.cli import main
from tests.support.browser import frontend_rows
from tests.support.project import ROOT


def test_score_command_on_real_rows(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)  # the default render.tailwind_css is relative to the project
    rows = frontend_rows()[:3]
    answers = [
        f"Here is the page:\n```html\n{rows[0]['ground_truth']}\n```\nI WANT TO ANSWER",  # the target itself
        "I could not make a page, sorry.",  # no <html> snippet
        "<html><body><p>A plain page.</p></body></html>",
        rows[0]["ground_truth"],  # rows 0 and 3 share one target: it is rendered once
    ]
    trajectories = tmp_path / "traj.jsonl"
    with trajectories.open("w") as fh:
        for task, answer in zip(rows + rows[:1], answers):
            fh.write(json.dumps({"task": task, "answer": answer}) + "\n")
    out = tmp_path / "scores.jsonl"
    assert main(["score", "--domain", "frontend", str(trajectories), "--out", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["metric"] == "pixels" and summary["count"] == 4
    assert summary["no_html"] == 1 and summary["render_failures"] == {"answers": 0, "targets": 0}
    per_row = pl.read_ndjson(out)
    assert per_row["line"].to_list() == [1, 2, 3, 4]
    scores = per_row["similarity"].to_list()
    assert scores[0] == pytest.approx(1.0) and scores[3] == pytest.approx(1.0)
    assert scores[1] == 0.0 and 0.0 < scores[2] < 0.7
    assert per_row["answer_status"].to_list() == ["rendered", "no_html", "rendered", "rendered"]
    assert summary["similarity"] == pytest.approx(sum(scores) / 4)


@pytest.mark.parametrize(
    "row, field",
    [
        ({"task": {"problem_description": "A page"}, "answer": "<html></html>"}, "'task.ground_truth'"),
        (
            {"task": {"problem_description": "A page", "ground_truth": "no page here"}, "answer": ""},
            "'task.ground_truth'",
        ),
        ({"task": {"problem_description": "A page", "ground_truth": "<html></html>"}, "answer": None}, "'answer'"),
        ({"answer": "<html></html>"}, "'task'"),
    ],
)
def test_score_command_names_a_bad_row(tmp_path, capsys, row, field):
    path = tmp_path / "bad.jsonl"
    good = {"task": {"problem_description": "A page", "ground_truth": "<html></html>"}, "answer": "<html></html>"}
    path.write_text(json.dumps(good) + "\n" + json.dumps(row) + "\n")
    assert main(["score", "--domain", "frontend", str(path)]) == 2
    message = capsys.readouterr().out
    assert str(path) in message.replace("\n", "") and f"line 2: field {field}" in message


def test_clip_metric_needs_a_checkpoint(tmp_path, capsys):
    path = tmp_path / "rows.jsonl"
    path.write_text("")
    assert main(["score", "--domain", "frontend", str(path), "--metric", "clip"]) == 2
    assert "--clip-checkpoint" in capsys.readouterr().out
