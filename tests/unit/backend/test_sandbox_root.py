"""What an answer can find of the host: nothing but what Python needs, wherever the ground truth lies.

Each answer here searches as a cheat would: it reads the mount table, walks every directory the table
names and every directory above those, and "/" itself, a few levels down, and reports each file that
holds a secret token or is a checkout's params.yaml, and each line of the mount table that names the
places the secrets lie. The secrets lie beside the project (outside every folder a hide-list would
think of: not in /tmp, the project, the working directory or a home), as a scored trajectories file
and as a second checkout of the project. `tests/integration/test_sandbox_experiment.py` does the
same inside `dvc exp run --temp`.

The search also writes the token into its own /tmp first and must find it there: a search that finds
nothing because it searched nothing would prove nothing.
"""

from __future__ import annotations

import os
import shutil
import textwrap
import uuid
from pathlib import Path

import pytest

from sweetflow.backend.sandbox import plaindata
from sweetflow.backend.sandbox.pool import PROJECT_ROOT, Job, Sandbox
from tests.support.nonroot import NonRoot
from tests.support.params import sandbox_params

# The walk reads many files on a host that shows them all: room for it, within one call.
SEARCH_LIMITS = {"workers": 1, "call_timeout_s": 60.0, "task_timeout_s": 90.0, "cpu_s": 60}

SEARCH = textwrap.dedent(
    '''
    import os

    TOKEN = "$token"
    PLACE = "$place"
    SKIP = ("/proc", "/sys", "/dev", "/usr")  # the kernel's views, devices and the system's own files
    LIBRARIES = ("site-packages", "dist-packages", "lib-dynload", "python3", "node_modules", ".git")

    def walk(start, depth, found):
        if depth < 0 or start.startswith(SKIP) and start != "/":
            return
        try:
            entries = list(os.scandir(start))
        except OSError:
            return
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if not entry.name.startswith(LIBRARIES):
                        walk(entry.path, depth - 1, found)
                elif entry.is_file(follow_symlinks=False) and entry.stat().st_size < 1 << 20:
                    with open(entry.path, "rb") as fh:
                        if entry.name == "params.yaml" or TOKEN.encode() in fh.read():
                            found.add(entry.path)
            except OSError:
                pass

    def search():
        with open("/tmp/control.txt", "w") as fh:
            fh.write(TOKEN)
        with open("/proc/self/mountinfo") as fh:
            table = fh.read().splitlines()
        starts = {"/", "/tmp"}
        for line in table:
            for path in line.split()[3:5]:  # the mount's root in its filesystem, and where it is mounted
                while path not in ("/", ""):
                    starts.add(path)
                    path = os.path.dirname(path)
        found = set()
        for start in sorted(starts):
            if not os.path.basename(start).startswith(LIBRARIES):
                walk(start, 3, found)
        return {"files": sorted(found), "mount_lines": [line for line in table if PLACE in line]}
    '''
)


def search_code(token: str, place: str) -> str:
    return SEARCH.replace("$token", token).replace("$place", place)


@pytest.fixture
def beside() -> Path:
    """A directory beside the project, open to every user: outside everything a sandbox that hides a
    list of folders (the project, the working directory, /tmp, the homes) would hide."""
    path = PROJECT_ROOT.parent / f"sweetflow-beside-{uuid.uuid4().hex[:12]}"
    path.mkdir(mode=0o755)
    path.chmod(0o755)
    yield path
    shutil.rmtree(path)


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
        r, left = nonroot.call("tests.support.nonroot:run_job", "/", code=code, calls=["search()"],
                               params=SEARCH_LIMITS)  # fmt: skip
        assert left == []
        status, output = r["status"], r["outputs"][0]
    assert status == "ok" and output is not None, status
    found = plaindata.loads(output)
    assert "/tmp/control.txt" in found["files"]  # the search works
    found["files"].remove("/tmp/control.txt")
    return found


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
