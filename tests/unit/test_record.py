"""`sweetflow record`: a finished run's files copied out of a real DVC workspace into a record folder."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sweetflow.cli import main
from sweetflow.core.errors import InputError
from sweetflow.record import write_record
from tests.support.project import run

ROOT = Path(__file__).resolve().parents[2]

# What a run leaves in reports/, as the report, evaluation and stage metrics do (a stand-in stage writes it).
REPORTS = {
    "reports/results.md": "# results\n",
    "reports/summary/results.json": '{"success": 0.4}\n',
    "reports/runs/make.json": '{"seconds": 1}\n',
    "reports/backend/stages/critics/with_info/metrics.json": '{"nll": 0.1}\n',
    "reports/backend/rft/metrics.json": '{"success": 0.3}\n',
    "reports/backend/sweet/metrics.json": '{"success": 0.4}\n',
}


@pytest.fixture
def workspace(tmp_path) -> Path:
    """A git + DVC project whose one stage wrote REPORTS, reproduced: its workspace is its lock's run."""
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(ROOT / "params.yaml", project / "params.yaml")
    (project / "make.py").write_text(
        "import pathlib\n"
        f"for name, text in {REPORTS!r}.items():\n"
        "    path = pathlib.Path(name)\n"
        "    path.parent.mkdir(parents=True, exist_ok=True)\n"
        "    path.write_text(text)\n"
    )
    outs = [
        "reports/results.md",
        "reports/summary",
        "reports/runs",
        "reports/backend/stages",
        "reports/backend/rft",
        "reports/backend/sweet",
    ]
    (project / "dvc.yaml").write_text(
        "stages:\n  make:\n    cmd: python make.py\n    deps: [make.py]\n    params: [seeds]\n"
        "    outs:\n" + "".join(f"      - {out}: {{cache: false}}\n" for out in outs)
    )
    shutil.copy(ROOT / ".dvcignore", project / ".dvcignore")
    for command in (["git", "init", "-q", "-b", "main"], ["dvc", "init", "-q"], ["dvc", "repro", "-q"]):
        run(command, project)
    return project


def test_the_record_holds_the_run_and_keeps_the_folders_other_files(workspace, tmp_path):
    out = tmp_path / "record"
    (out / "tuning").mkdir(parents=True)
    (out / "tuning" / "backend.md").write_text("the tuning table\n")
    (out / "progress.md").write_text("running\n")
    (out / "evaluations").mkdir()
    (out / "evaluations" / "stale.json").write_text("{}\n")  # a method an earlier record had
    # What a stage killed while writing its output leaves beside it (DVC ignores it: .dvcignore).
    killed = workspace / "reports/backend/stages/critics/.no_info.tmp-4242"
    killed.mkdir(parents=True)
    (killed / "metrics.json").write_text('{"nll": 9.9}\n')

    assert main(["record", str(out), "--root", str(workspace)]) == 0

    expected = {
        "params.yaml": workspace / "params.yaml",
        "dvc.lock": workspace / "dvc.lock",
        "results.md": workspace / "reports/results.md",
        "summary/results.json": workspace / "reports/summary/results.json",
        "runs/make.json": workspace / "reports/runs/make.json",
        "stages/critics/with_info/metrics.json": workspace / "reports/backend/stages/critics/with_info/metrics.json",
        "evaluations/rft.json": workspace / "reports/backend/rft/metrics.json",
        "evaluations/sweet.json": workspace / "reports/backend/sweet/metrics.json",
        "tuning/backend.md": None,
    }
    found = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    assert found == set(expected)
    for name, source in expected.items():
        if source is not None:
            assert (out / name).read_bytes() == source.read_bytes(), name
    assert (out / "tuning" / "backend.md").read_text() == "the tuning table\n"
    assert not list(tmp_path.glob(".record*")), "the staging folder is left behind"


def test_a_workspace_that_moved_from_its_lock_is_refused_and_the_record_is_untouched(workspace, tmp_path):
    out = tmp_path / "record"
    write_record(out, workspace)
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    (workspace / "reports/backend/rft/metrics.json").write_text('{"success": 0.9}\n')  # another run's figure

    with pytest.raises(InputError, match="'make' is not up to date") as error:
        write_record(out, workspace)
    assert str(workspace / "dvc.lock") in str(error.value)
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_a_run_without_its_results_or_domain_is_refused_by_name(workspace, tmp_path):
    with pytest.raises(InputError, match="without 'frontend'"):
        write_record(tmp_path / "record", workspace, domain="frontend")
    (workspace / "reports/results.md").unlink()
    with pytest.raises(InputError, match="results.md: not found"):
        write_record(tmp_path / "record", workspace)
    assert not (tmp_path / "record").exists()
