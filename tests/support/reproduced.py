"""The small project on which `dvc repro` has run (fixture `repro_project`), and what its tests compare.

It is built once per test run: under `pytest -n 2` the first worker that needs it builds it in the
run's directory above the workers' own, holding a lock the other worker waits on; each worker then
gets a copy of its own, so that the DVC commands of one worker's tests never meet the other's in
the same repository (DVC locks a repository while it reads it)."""

from __future__ import annotations

import fcntl
import os
import shutil
from contextlib import contextmanager
from pathlib import Path

from tests.support.project import SMALL_PARAMS, make_project, run

# Every data output of both domains' trained chains (directories with a manifest).
DATA_OUTS = tuple(
    f"data/{domain}/{out}"
    for domain in ("backend", "frontend")
    for out in (
        "tasks",
        "evaluations/reference",
        "demos",
        "rollout",
        "trajectory_pairs",
        "evaluations/expert",
        "evaluations/no_ask",
        "evaluations/zero_shot",
        "candidates",
        "ranked/with_info",
        "step_pairs/with_info",
        "critic_check/with_info",
        "evaluations/sweet",
    )
)
# Checkpoints' weights and tokenizers (their training_config.json hold wall times).
CHECKPOINT_FILES = tuple(
    f"models/{domain}/{path}"
    for domain in ("backend", "frontend")
    for path in (
        "base/model.safetensors",
        "base/tokenizer.json",
        "critics/with_info/model.safetensors",
        "critics/no_info/model.safetensors",
        "policies/rft/seed1/model.safetensors",
        "policies/mtdpo/seed0/model.safetensors",
        "policies/sweet/seed1/model.safetensors",
    )
)
METRICS = tuple(
    f"reports/{domain}/{path}/metrics.json"
    for domain in ("backend", "frontend")
    for path in (
        "stages/tasks",
        "reference",
        "stages/demos",
        "stages/rollout",
        "stages/trajectory_pairs",
        "expert",
        "no_ask",
        "zero_shot",
        "stages/candidates",
        "stages/ranked/with_info",
        "stages/step_pairs/with_info",
        "stages/critic_check/with_info",
        "rft",
        "mtdpo",
        "sweet",
        "sweet_no_info",
    )
)


def reproduced_project(tmp_path_factory) -> Path:
    """This worker's copy of the run's reproduced project (the project itself without xdist)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    shared = tmp_path_factory.getbasetemp()
    if worker:
        shared = shared.parent  # the run's directory; each worker's own is below it
    built = shared / "repro" / "project"
    built.parent.mkdir(exist_ok=True)
    with locked(shared / "repro.lock"):
        failed = shared / "repro" / "failed.txt"
        if failed.is_file():  # another worker's build failed: say why at once, don't build it again
            raise AssertionError(f"the reproduced project failed to build:\n{failed.read_text()}")
        if not (shared / "repro" / "built").is_file():
            try:
                build(built)
            except BaseException as error:
                failed.write_text(str(error))
                raise
            (shared / "repro" / "built").touch()
    if not worker:
        return built
    return copy_of(built, tmp_path_factory.mktemp("dvc") / "project")


def build(project: Path) -> None:
    make_project(project, SMALL_PARAMS)
    run(["dvc", "repro", "--quiet"], project, timeout=1800)  # a shared machine may be slow
    run(["git", "add", "-A"], project)
    run(["git", "commit", "-q", "-m", "repro"], project)


@contextmanager
def locked(path: Path):
    """Hold an exclusive lock on `path` (waiting for it as long as another process holds it)."""
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def copy_of(project: Path, dest: Path) -> Path:
    shutil.copytree(project, dest, symlinks=True)
    return dest
