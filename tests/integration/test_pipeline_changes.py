"""Copies of the reproduced project changed the ways a team changes it: a hand-edited artifact and a changed
value named by lineage, a forced identical rerun, a changed value rerunning exactly its readers, Python
writing bytecode beside the code, and the outputs shared through a DVC remote."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import polars as pl

from sweetflow.core.artifacts import content_hash
from sweetflow.dag import load_stages
from tests.support.project import dvc_status, run
from tests.support.reproduced import CHECKPOINT_FILES, DATA_OUTS, METRICS, copy_of


def test_lineage_names_a_hand_edited_artifact(repro_project: Path, tmp_path: Path):
    project = tmp_path / "edited"
    shutil.copytree(repro_project, project, symlinks=True)
    tasks = project / "data/backend/tasks/test.parquet"
    df = pl.read_parquet(tasks)
    tasks.unlink()  # DVC may have linked it to its cache; write a new file, don't edit the cache
    df.with_columns(pl.lit("edited").alias("problem_description")).write_parquet(tasks)
    result = run(["sweetflow", "lineage", "reports/backend/reference/metrics.json"], project, check=False)
    assert result.returncode == 1
    text = re.sub(r"\s+", " ", result.stdout)
    assert "data/backend/tasks: content differs" in text
    assert "input data/backend/tasks/test.parquet changed" in text
    assert "dvc.lock: stage 'tasks@backend' is not up to date" in text


def test_lineage_names_params_changed_since_the_run(repro_project: Path, tmp_path: Path):
    project = tmp_path / "stale"
    shutil.copytree(repro_project, project, symlinks=True)
    params = project / "params.yaml"
    params.write_text(params.read_text().replace("seed: 3", "seed: 4"))
    result = run(["sweetflow", "lineage", "data/backend/tasks", "--no-dvc"], project, check=False)
    assert result.returncode == 1
    assert "section 'backend.tasks' changed" in re.sub(r"\s+", " ", result.stdout)


def test_team_shares_artifacts_through_a_remote(repro_project: Path, tmp_path: Path):
    origin = tmp_path / "origin"
    shutil.copytree(repro_project, origin, symlinks=True)
    remote = tmp_path / "remote"
    run(["dvc", "remote", "add", "-d", "shared", str(remote)], origin)
    run(["git", "commit", "-qam", "add remote"], origin)
    run(["dvc", "push", "-q"], origin)

    clone = tmp_path / "clone"
    run(["git", "clone", "-q", str(origin), str(clone)], tmp_path)
    run(["dvc", "pull", "-q"], clone)
    for out in DATA_OUTS + METRICS + CHECKPOINT_FILES:
        assert content_hash(clone / out) == content_hash(origin / out)
    assert dvc_status(clone) == {}
    assert "up to date" in run(["dvc", "repro"], clone).stdout.lower()


def test_a_clone_that_has_not_pulled_runs_a_targeted_experiment(repro_project: Path, tmp_path: Path):
    """A tuning trial is a targeted `dvc exp run`. In a clone without the DVC cache it must not need
    an output the clone lacks: a top-level plot inside reports/summary made DVC read that directory's
    listing from the cache, and the trial failed after its stages had run."""
    clone = tmp_path / "clone"
    run(["git", "clone", "-q", str(repro_project), str(clone)], tmp_path)
    assert not (clone / "reports/summary").exists()
    run(["dvc", "exp", "run", "-n", "trial", "-S", "backend.tasks.seed=4", "tasks@backend"], clone)
    assert "trial" in run(["dvc", "exp", "list", "--name-only"], clone).stdout.split()
    assert (clone / "data/backend/tasks/test.parquet").is_file()


# --- sharing and auditing hold for a user whose Python writes bytecode (tool_env: it is on) ---------


def test_importing_every_module_changes_no_stage(repro_project: Path, tmp_path: Path):
    """Python writes __pycache__ into every package a stage depends on; .dvcignore keeps it out of
    the dependencies' hashes."""
    project = copy_of(repro_project, tmp_path / "imported")
    modules = sorted(
        ".".join(p.with_suffix("").relative_to(project).parts).removesuffix(".__init__")
        for top in ("sweetflow", "stages")
        for p in (project / top).rglob("*.py")
    )
    run(["python", "-c", f"import importlib; [importlib.import_module(m) for m in {modules!r}]"], project)
    assert list((project / "sweetflow/rl").glob("__pycache__/*.pyc")), "bytecode should have been written"
    assert dvc_status(project) == {}


def test_a_forced_identical_rerun_leaves_every_later_stage_up_to_date(repro_project: Path, tmp_path: Path):
    """Outputs are the same bytes for the same inputs (volatile facts go to the run record): DVC's
    early cut-off then keeps everything after the rerun stage up to date."""
    project = copy_of(repro_project, tmp_path / "forced")
    before = (project / "data/backend/tasks/manifest.json").read_bytes()
    run(["dvc", "repro", "--force", "--single-item", "tasks@backend"], project)
    assert (project / "data/backend/tasks/manifest.json").read_bytes() == before
    assert dvc_status(project) == {}


def test_a_changed_value_reruns_exactly_the_stages_that_read_it(repro_project: Path, tmp_path: Path):
    """A value that lived as a model default before params.yaml held every value."""
    project = copy_of(repro_project, tmp_path / "changed")
    params = (project / "params.yaml").read_text()
    (project / "params.yaml").write_text(params.replace("memory_mb: 1024", "memory_mb: 1000", 1))
    readers = {s.name for s in load_stages(project) if "backend.scoring" in json.loads(s.params)}
    assert {"tasks@backend", "evaluate@backend-expert", "rollout@backend", "critic_check@backend-with_info"} <= readers
    assert set(dvc_status(project)) == readers
    diff = json.loads(run(["dvc", "params", "diff", "--json"], project).stdout)
    change = diff["params.yaml"]["backend.scoring.memory_mb"]
    assert (change["old"], change["new"]) == (1024, 1000)
