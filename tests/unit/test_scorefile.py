"""`sweetflow score` fails at once, before any scoring, on a file with no rows or an `--out` that
cannot be written: scoring can take an hour, and its results would be lost at the end."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sweetflow.cli import main
from tests.support.project import ROOT, SAMPLE

ROW = json.loads((SAMPLE / "backend_test_first100.jsonl").read_text().splitlines()[0])


@pytest.fixture(autouse=True)
def no_scoring(monkeypatch):
    """Starting the sandbox or the renderer fails the test: every case here must stop before."""

    def started(*args, **kwargs):
        raise AssertionError("scoring started")

    monkeypatch.setattr("sweetflow.backend.scorefile.Sandbox", started)
    monkeypatch.setattr("sweetflow.frontend.scorefile.RenderPool", started)


def score(capsys, path: Path, domain: str, *args: str) -> tuple[int, str]:
    code = main(["score", str(path), "--domain", domain, "--params", str(ROOT / "params.yaml"), *args])
    return code, capsys.readouterr().out


@pytest.mark.parametrize("domain", ["backend", "frontend"])
@pytest.mark.parametrize("text", ["", "\n  \n\n"], ids=["empty", "blank lines"])
def test_a_file_without_rows_is_an_error(tmp_path, capsys, domain, text):
    path = tmp_path / "t.jsonl"
    path.write_text(text)
    out = tmp_path / "scores.jsonl"
    assert score(capsys, path, domain, "--out", str(out)) == (2, f"error: {path}: no rows to score\n")
    assert not out.exists()  # the check that --out is writable leaves nothing


def unwritable(tmp_path: Path) -> dict[str, Path]:
    (tmp_path / "a_file").write_text("x")
    (tmp_path / "a_dir").mkdir()
    return {
        "No such file or directory": tmp_path / "missing" / "scores.jsonl",
        "Is a directory": tmp_path / "a_dir",
        "Not a directory": tmp_path / "a_file" / "scores.jsonl",
    }


@pytest.mark.parametrize("domain", ["backend", "frontend"])
@pytest.mark.parametrize("problem", ["No such file or directory", "Is a directory", "Not a directory"])
def test_an_out_that_cannot_be_written_fails_before_scoring(tmp_path, capsys, domain, problem):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"task": ROW, "answer": ROW["ground_truth"]}) + "\n")
    out = unwritable(tmp_path)[problem]
    assert score(capsys, path, domain, "--out", str(out)) == (2, f"error: {out}: cannot be written ({problem})\n")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes in a read-only directory")
def test_an_out_in_a_read_only_directory_fails_before_scoring(tmp_path, capsys):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"task": ROW, "answer": ROW["ground_truth"]}) + "\n")
    (tmp_path / "ro").mkdir(mode=0o555)
    out = tmp_path / "ro" / "scores.jsonl"
    expected = (2, f"error: {out}: cannot be written (Permission denied)\n")
    assert score(capsys, path, "backend", "--out", str(out)) == expected
