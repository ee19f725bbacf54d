"""Inside `dvc exp run --temp`, as the tuning grid runs, an answer finds nothing of the workspace.

DVC runs the experiment's stage in a copy of the repository under <workspace>/.dvc/tmp/exps/, and the
stage imports the sandbox from that copy. A sandbox that hid the project it was imported from hid the
copy, not the workspace above it, which the mount table led to. A tiny repository holding our package
and a secret runs one stage that scores the searching answer of `tests/unit/backend/test_sandbox_root.py`
in the sandbox, and writes down what it found. The workspace lies beside the project, not under /tmp.
"""

from __future__ import annotations

import json
import os
import shutil
import textwrap
import uuid
from pathlib import Path

import pytest
import yaml

from tests.support.cheat import SEARCH_LIMITS, beside_project, found_by, search_code
from tests.support.project import ROOT, run

STAGE = textwrap.dedent(
    """
    import json, sys
    from sweetflow.backend.sandbox.pool import PROJECT_ROOT, Job, Sandbox
    from sweetflow.params import load_params

    limits = json.loads(sys.argv[2])
    params = load_params("params.yaml").backend.scoring.model_copy(update=limits)
    with Sandbox(params) as sb:
        (run,) = sb.run([Job(open("search.py").read(), ["search()"])])
    with open(sys.argv[1], "w") as fh:
        json.dump({"status": run.status, "output": run.outputs[0], "project": str(PROJECT_ROOT)}, fh)
    """
)


@pytest.fixture
def beside() -> Path:
    with beside_project() as path:
        yield path


def test_an_answer_finds_nothing_of_the_workspace_inside_dvc_exp_run_temp(beside: Path):
    if os.geteuid() != 0:
        pytest.skip("the root sandbox needs root (the unit tests run a normal user's)")
    token = f"sweetflow-secret-{uuid.uuid4().hex}"
    workspace, result = beside / "workspace", beside / "found.json"
    shutil.copytree(ROOT / "sweetflow", workspace / "sweetflow", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "params.yaml", workspace / "params.yaml")
    (workspace / "SECRET").write_text(token)
    (workspace / "search.py").write_text(search_code(token, beside.name))
    (workspace / "stage.py").write_text(STAGE)
    command = f"python stage.py {result} '{json.dumps(SEARCH_LIMITS)}'"
    stage = {"cmd": command, "deps": ["stage.py", "search.py"]}
    (workspace / "dvc.yaml").write_text(yaml.safe_dump({"stages": {"search": stage}}))
    for cmd in (
        ["git", "init", "-q"],
        ["dvc", "init", "-q"],
        ["dvc", "config", "core.analytics", "false"],
        ["git", "add", "-A"],
        ["git", "commit", "-qm", "tiny"],
    ):
        run(cmd, workspace, timeout=60)
    run(["dvc", "exp", "run", "--temp"], workspace, timeout=120)

    found = json.loads(result.read_text())
    assert "/.dvc/tmp/exps/" in found["project"]  # the stage ran in DVC's copy, with the copy's package
    assert found["status"] == "ok" and found["output"] is not None
    files = found_by(found["output"])
    assert not any(path.startswith(str(workspace)) for path in files["files"])
    assert files == {"files": [], "mount_lines": []}
