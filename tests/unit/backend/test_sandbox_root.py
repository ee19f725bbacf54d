"""What an answer can find of the host: nothing but what Python needs, wherever the ground truth lies.

Each answer here searches as a cheat would (`tests.support.cheat`): through the mount table, every
directory it names and those above them, and "/" itself. The secrets lie beside the project (outside
every folder a hide-list would think of: not in /tmp, the project, the working directory or a home),
as a scored trajectories file and as a second checkout of the project, readable by every user.
`tests/integration/test_sandbox_experiment.py` does the same inside `dvc exp run --temp`.
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

import pytest

from sweetflow.backend.sandbox.pool import PROJECT_ROOT, Job, Sandbox
from tests.support.cheat import SEARCH_LIMITS, beside_project, found_by, search_code
from tests.support.nonroot import NonRoot
from tests.support.params import sandbox_params


@pytest.fixture
def beside() -> Path:
    with beside_project() as path:
        yield path


def scored_file(beside: Path, token: str) -> Path:
    """A trajectories file being scored, outside the project: its rows hold the references."""
    path = beside / "trajectories.jsonl"
    path.write_text(f'{{"task": {{"ground_truth": "def f(x):\\n    return \\"{token}\\""}}, "answer": ""}}\n')
    path.chmod(0o644)
    return path


def second_checkout(beside: Path, token: str) -> Path:
    """Another checkout of the project: its params and code regenerate every task."""
    checkout = beside / "sweetflow-checkout"
    shutil.copytree(PROJECT_ROOT / "sweetflow", checkout / "sweetflow", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(PROJECT_ROOT / "params.yaml", checkout / "params.yaml")
    (checkout / "SECRET").write_text(token)
    for d, _, files in os.walk(checkout):
        os.chmod(d, 0o755)
        for name in files:
            os.chmod(os.path.join(d, name), 0o644)
    return checkout / "params.yaml"


def search_in_sandbox(user: str, nonroot: NonRoot | str, code: str) -> dict:
    """Run the search in root's sandbox, or in a normal user's; return what it found."""
    if user == "root":
        if os.geteuid() != 0:
            pytest.skip("the root sandbox needs root")
        with Sandbox(sandbox_params(**SEARCH_LIMITS)) as sb:
            (run,) = sb.run([Job(code, ["search()"])])
        status, output = run.status, run.outputs[0]
    else:
        if isinstance(nonroot, str):
            pytest.skip(nonroot)
        # From "/": the caller's working directory is no place to keep secrets from an answer.
        r, left = nonroot.call(
            "tests.support.nonroot:run_job", "/", code=code, calls=["search()"], params=SEARCH_LIMITS
        )
        assert left == []
        status, output = r["status"], r["outputs"][0]
    assert status == "ok" and output is not None, status
    return found_by(output)


@pytest.mark.parametrize("user", ["root", "non-root"])
def test_an_answer_finds_no_scored_file_outside_the_project(user: str, nonroot, beside: Path):
    token = f"sweetflow-secret-{uuid.uuid4().hex}"
    path = scored_file(beside, token)
    found = search_in_sandbox(user, nonroot, search_code(token, beside.name))
    assert str(path) not in found["files"]
    assert found == {"files": [], "mount_lines": []}


@pytest.mark.parametrize("user", ["root", "non-root"])
def test_an_answer_finds_no_second_checkout_of_the_project(user: str, nonroot, beside: Path):
    token = f"sweetflow-secret-{uuid.uuid4().hex}"
    params = second_checkout(beside, token)
    found = search_in_sandbox(user, nonroot, search_code(token, beside.name))
    assert str(params) not in found["files"]
    # No checkout at all, nor the project itself: no params.yaml anywhere in reach.
    assert found == {"files": [], "mount_lines": []}
