"""`sweetflow lineage` on a project whose files are not what a stage wrote: symlink loops, manifests
edited by hand or cut short, paths outside the project. Each is one line naming the file, never a
traceback."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sweetflow.cli import main
from sweetflow.core.artifacts import MANIFEST, content_hash
from tests.support.project import ROOT


@pytest.fixture
def project(tmp_path: Path, monkeypatch) -> Path:
    """A project with one artifact, data/x, and its manifest as a stage writes it."""
    shutil.copy(ROOT / "params.yaml", tmp_path / "params.yaml")
    (tmp_path / "data" / "x").mkdir(parents=True)
    (tmp_path / "data" / "x" / "rows.txt").write_text("rows\n")
    write_manifest(tmp_path / "data" / "x", {})
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write_manifest(artifact: Path, changes: dict) -> None:
    manifest = {
        "stage": "s",
        "output": "data/x",
        "output_hash": content_hash(artifact),
        "metrics": {},
        "params": {},
        "inputs": {},
        "seed": 0,
    }
    (artifact / MANIFEST).write_text(json.dumps({**manifest, **changes}))


def lineage(capsys, *args: str) -> tuple[int, str]:
    code = main(["lineage", "--no-dvc", *args])
    return code, capsys.readouterr().out


def test_an_intact_artifact_is_verified(project, capsys):
    code, out = lineage(capsys, "data/x/rows.txt")
    assert code == 0 and out.splitlines() == [
        "✓ data/x ← stage s  params: none  code: no commit  seed: 0  ? s",
        "✓ every recorded hash matches the files on disk",
    ]


@pytest.mark.parametrize("loop", ["data/x/loop", "loop"], ids=["the path", "the root"])
def test_a_symlink_loop_is_named(project, capsys, loop):
    (project / loop).symlink_to(project / loop)
    args = ("data/x/loop",) if loop != "loop" else ("data/x", "--root", "loop")
    code, out = lineage(capsys, *args)
    assert code == 2 and out.startswith(f"error: {loop}: cannot be resolved:") and out.count("\n") == 1


def test_a_path_outside_the_project_is_named(project, capsys, tmp_path_factory):
    outside = tmp_path_factory.mktemp("elsewhere") / "f.txt"
    outside.write_text("x")
    code, out = lineage(capsys, str(outside))
    assert code == 2 and out == f"error: {outside}: outside the project root {project} (--root)\n"


def test_an_input_outside_the_project_under_a_manifest_is_a_root_input(project, capsys, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    (elsewhere / "in.jsonl").write_text("{}\n")
    write_manifest(elsewhere, {})  # another project's artifact: not one of ours to walk
    source = elsewhere / "in.jsonl"
    write_manifest(project / "data" / "x", {"inputs": {str(source): content_hash(source)}})
    code, out = lineage(capsys, "data/x")
    assert code == 0 and f"{source} (source)" in out


@pytest.mark.parametrize(
    "text, problem",
    [
        ('{"stage": ', "line 1, column 11: not valid JSON: Expecting value"),
        ("[1, 2]", "expected a JSON object, got list"),
        ('{"stage": "s"}', "field 'output_hash': expected a string, got None"),
        ('{"stage": 1}', "field 'stage': expected a string, got 1"),
        ("\xff", "cannot be read: 'utf-8' codec can't decode"),
        ("[" * 100_000, "cannot be read: maximum recursion depth exceeded"),
    ],
    ids=["cut short", "a list", "no output_hash", "stage a number", "not UTF-8", "nested deeply"],
)
def test_a_malformed_manifest_is_named(project, capsys, text, problem):
    (project / "data" / "x" / MANIFEST).write_bytes(text.encode("latin-1"))
    code, out = lineage(capsys, "data/x")
    assert code == 2 and out.startswith(f"error: {project / 'data/x' / MANIFEST}: {problem}") and out.count("\n") == 1


scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=8)
manifest_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3), max_leaves=6)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=50)
@given(st.sampled_from(["stage", "output_hash", "metrics", "inputs", "params"]), manifest_values)
def test_any_value_of_a_walked_field_is_walked_or_named(project, capsys, field, value):
    write_manifest(project / "data" / "x", {field: value})
    code, out = lineage(capsys, "data/x")
    assert code in (0, 1) or (code == 2 and f"field {field!r}: expected" in out)


def test_markup_in_a_manifest_is_shown_as_text(project, capsys):
    write_manifest(project / "data" / "x", {"stage": "[/x]", "inputs": {"[bold]missing": "0"}})
    code, out = lineage(capsys, "data/x")
    assert code == 1 and "stage [/x]" in out and "input [bold]missing is missing" in out


def test_a_malformed_run_record_is_named(project, capsys):
    (project / "reports" / "runs").mkdir(parents=True)
    (project / "reports" / "runs" / "s.json").write_text("[")
    code, out = lineage(capsys, "data/x")
    assert code == 2 and out.startswith("error: reports/runs/s.json: line 1, column 2: not valid JSON")


def test_an_artifact_made_with_an_endpoint_says_what_answered_and_what_that_is_worth(project, capsys):
    answered = {"models": ["served-model"], "system_fingerprints": ["fp_1"]}
    write_manifest(project / "data" / "x", {"endpoints": {"http://127.0.0.1:8000/v1": answered}})
    code, out = lineage(capsys, "data/x")
    warning = (
        "⚠ asked http://127.0.0.1:8000/v1 (answered by served-model): what this stage read is only as traceable "
        "as that endpoint"
    )
    # The tree wraps a label at the console's width: compare the text with its line breaks undone.
    assert code == 0 and warning in " ".join(line.strip(" │") for line in out.splitlines())
