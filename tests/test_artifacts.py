"""The stage contract: whole outputs or none, each with a manifest."""

from __future__ import annotations

import json
import subprocess
import time

import psutil
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sweetflow.artifacts import MANIFEST, code_version, content_hash, read_manifest, stage_output
from sweetflow.params import Params


def test_output_appears_with_its_manifest(tmp_path):
    src = tmp_path / "input.txt"
    src.write_text("data")
    params = Params()
    # The wall time is the stage process's: what it did before opening its output (imports,
    # training) counts, here everything pytest did before this test.
    age_before = time.time() - psutil.Process().create_time()
    with stage_output(tmp_path / "out", "demo", {"backend.tasks": params.backend.tasks}, [src], seed=7) as output:
        assert not (tmp_path / "out").exists()  # nothing at the declared path until done
        (output.dir / "a.txt").write_text("hello")
    manifest = read_manifest(tmp_path / "out")
    assert manifest["stage"] == "demo" and manifest["seed"] == 7
    assert manifest["params"]["backend.tasks"]["n_test"] == params.backend.tasks.n_test
    assert manifest["inputs"] == {src.as_posix(): content_hash(src)}
    assert manifest["output_hash"] == content_hash(tmp_path / "out")
    assert {"python", "polars", "pydantic"} <= set(manifest["packages"])
    assert manifest["wall_time_s"] >= age_before > 0


def test_failed_stage_leaves_the_previous_output_untouched(tmp_path):
    out = tmp_path / "out"
    with stage_output(out, "demo", {}) as output:
        (output.dir / "a.txt").write_text("good")
    with pytest.raises(RuntimeError):
        with stage_output(out, "demo", {}) as output:
            (output.dir / "a.txt").write_text("half")
            raise RuntimeError("killed mid-way")
    assert (out / "a.txt").read_text() == "good"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no temporary left behind


def test_metrics_file_is_written_apart_and_recorded(tmp_path):
    metrics = tmp_path / "reports" / "m.json"
    with stage_output(tmp_path / "out", "demo", {}, metrics=metrics) as output:
        output.metrics["score"] = 0.5
    assert json.loads(metrics.read_text()) == {"score": 0.5}
    assert read_manifest(tmp_path / "out")["metrics"] == {metrics.as_posix(): content_hash(metrics)}


def test_rerun_replaces_the_whole_directory(tmp_path):
    out = tmp_path / "out"
    with stage_output(out, "demo", {}) as output:
        (output.dir / "old.txt").write_text("1")
    with stage_output(out, "demo", {}) as output:
        (output.dir / "new.txt").write_text("2")
    assert sorted(p.name for p in out.iterdir()) == [MANIFEST, "new.txt"]


@settings(max_examples=30, deadline=None)
@given(st.dictionaries(st.from_regex(r"[a-z]{1,8}", fullmatch=True), st.binary(max_size=64), min_size=1, max_size=5))
def test_content_hash_sees_every_byte_and_name_but_not_manifests(tmp_path_factory, files):
    d = tmp_path_factory.mktemp("h")
    for name, data in files.items():
        (d / name).write_bytes(data)
    before = content_hash(d)
    (d / MANIFEST).write_text("{}")
    assert content_hash(d) == before
    name = next(iter(files))
    (d / name).write_bytes(files[name] + b"x")
    assert content_hash(d) != before


def test_code_is_dirty_when_code_changes_not_when_the_pipeline_writes(tmp_path, monkeypatch):
    def git(*args):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tmp_path, check=True,
                       capture_output=True)  # fmt: skip

    for name in ("sweetflow/step.py", "dvc.lock", "reports/backend/metrics.json", "params.yaml"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("1\n")
    git("init", "-q")
    git("add", ".")
    git("commit", "-qm", "start")
    monkeypatch.chdir(tmp_path)
    clean = code_version()
    assert clean["dirty"] is False and len(clean["git_commit"]) == 40

    (tmp_path / "dvc.lock").write_text("2\n")  # what a run writes
    (tmp_path / "reports/backend/metrics.json").write_text("2\n")
    (tmp_path / "untracked.txt").write_text("new\n")
    assert code_version()["dirty"] is False

    for name in ("sweetflow/step.py", "params.yaml"):
        (tmp_path / name).write_text("2\n")
        assert code_version()["dirty"] is True, name
        git("checkout", "--", name)
