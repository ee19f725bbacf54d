"""The stage contract: whole outputs or none, each with a manifest that is the same for the same
inputs, and a run record beside it for what differs from run to run."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from fnmatch import fnmatch

import psutil
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sweetflow.core.artifacts import (
    MANIFEST,
    code_version,
    content_hash,
    cpu,
    read_manifest,
    read_run_record,
    save_every_seconds,
    stage_output,
    written_whole,
)
from sweetflow.core.params import ParamsError
from tests.support.params import project_params
from tests.support.project import ROOT


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    """Run records go to reports/runs/ under the working directory."""
    monkeypatch.chdir(tmp_path)


def test_output_appears_with_its_manifest_and_a_run_record(tmp_path):
    src = tmp_path / "input.txt"
    src.write_text("data")
    tasks = project_params().backend.tasks
    # The wall time is the stage process's: what it did before opening its output (imports,
    # training) counts, here everything pytest did before this test.
    age_before = time.time() - psutil.Process().create_time()
    with stage_output(tmp_path / "out", "demo@backend", {"backend.tasks": tasks}, [src], seed=7) as output:
        assert not (tmp_path / "out").exists()  # nothing at the declared path until done
        (output.dir / "a.txt").write_text("hello")
        output.run["training"] = {"train_seconds": 1.5}
    manifest = read_manifest(tmp_path / "out")
    assert manifest["stage"] == "demo@backend" and manifest["seed"] == 7
    assert manifest["params"]["backend.tasks"]["n_test"] == tasks.n_test
    assert manifest["inputs"] == {src.as_posix(): content_hash(src)}
    assert manifest["output_hash"] == content_hash(tmp_path / "out")
    assert set(manifest) == {"stage", "output", "output_hash", "metrics", "params", "inputs", "seed"}
    run = read_run_record("demo@backend")
    assert run == json.loads((tmp_path / "reports/runs/demo@backend.json").read_text())
    assert {"python", "polars", "pydantic"} <= set(run["packages"]) and run["training"] == {"train_seconds": 1.5}
    assert run["wall_time_s"] >= age_before > 0 and run["machine"]["cores"] >= 1 and run["machine"]["cpu"]


def test_the_same_inputs_give_the_same_bytes(tmp_path):
    """What DVC caches is a function of the inputs alone: a rerun leaves every later stage up to date."""
    src = tmp_path / "input.txt"
    src.write_text("data")
    metrics = tmp_path / "reports" / "m.json"
    manifests, records = [], []
    for _ in range(2):
        with stage_output(tmp_path / "out", "demo", {"seeds": [0, 1]}, [src], seed=1, metrics=metrics) as output:
            (output.dir / "a.txt").write_text("hello")
            output.metrics["score"] = 0.5
        manifests.append((tmp_path / "out" / MANIFEST).read_bytes())
        records.append(read_run_record("demo"))
        time.sleep(0.01)
    assert manifests[0] == manifests[1]
    assert records[0]["wall_time_s"] != records[1]["wall_time_s"]


def test_failed_stage_leaves_the_previous_output_untouched(tmp_path):
    out = tmp_path / "out"
    with stage_output(out, "demo", {}) as output:
        (output.dir / "a.txt").write_text("good")
    with pytest.raises(RuntimeError):
        with stage_output(out, "demo", {}) as output:
            (output.dir / "a.txt").write_text("half")
            raise RuntimeError("killed mid-way")
    assert (out / "a.txt").read_text() == "good"
    assert not list(tmp_path.glob("**/.*tmp-*"))  # no temporary left behind


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


def test_a_directory_written_whole_replaces_the_old_one_or_leaves_it_as_it_was(tmp_path):
    kept = tmp_path / "kept" / "seed0"
    with written_whole(kept) as staging:
        (staging / "old.txt").write_text("old")
    with pytest.raises(RuntimeError, match="killed"), written_whole(kept) as staging:
        (staging / "new.txt").write_text("half")
        raise RuntimeError("killed while writing")
    assert sorted(p.name for p in kept.parent.iterdir()) == ["seed0"]  # nothing staged left beside it
    assert [p.name for p in kept.iterdir()] == ["old.txt"]
    with written_whole(kept) as staging:
        (staging / "new.txt").write_text("new")
    assert [p.name for p in kept.iterdir()] == ["new.txt"]  # the new whole, nothing of the old
    assert sorted(p.name for p in kept.parent.iterdir()) == ["seed0"]


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


def test_content_hash_skips_what_a_killed_stage_left_behind_as_dvc_does(tmp_path):
    """A killed stage leaves `.<name>.tmp-<pid>` beside its output; a stage depending on the parent
    directory (the report reads reports/<domain>) must hash it as DVC does, which `.dvcignore` tells to
    skip it. A name that only looks similar is data."""
    (tmp_path / "stages/critic").mkdir(parents=True)
    (tmp_path / "stages/critic/metrics.json").write_text("{}")
    before = content_hash(tmp_path)
    (tmp_path / "stages/.base_model.tmp-4242").mkdir()
    (tmp_path / "stages/.base_model.tmp-4242/model.safetensors").write_bytes(b"half")
    (tmp_path / "stages/.metrics.json.tmp-17").write_text("{")
    assert content_hash(tmp_path) == before
    (tmp_path / "stages/base_model.tmp-1").write_text("not hidden")
    assert content_hash(tmp_path) != before
    # The same names as the project's .dvcignore pattern, which DVC matches like git does.
    assert ".*.tmp-*" in (ROOT / ".dvcignore").read_text().splitlines()
    assert fnmatch(".base_model.tmp-4242", ".*.tmp-*") and not fnmatch("base_model.tmp-1", ".*.tmp-*")


def test_code_is_dirty_when_code_changes_not_when_the_pipeline_or_an_experiment_writes(tmp_path, monkeypatch):
    def git(*args):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tmp_path, check=True, capture_output=True
        )

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
    (tmp_path / "params.yaml").write_text("2\n")  # an experiment's `dvc exp run -S` values
    (tmp_path / "untracked.txt").write_text("new\n")
    assert code_version()["dirty"] is False

    (tmp_path / "sweetflow/step.py").write_text("2\n")
    assert code_version()["dirty"] is True


def test_a_stage_that_ran_a_model_names_its_device_and_dtype_and_the_record_its_gpus(tmp_path):
    import torch

    from sweetflow.models.checkpoint import placement, resolve_device
    from tests.support.models import tiny_llama

    model = tiny_llama().to(resolve_device("auto"), torch.bfloat16)
    with stage_output(tmp_path / "out", "rank@backend-with_info", {}, seed=0) as output:
        output.devices["critic"] = placement(model)
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert read_manifest(tmp_path / "out")["devices"] == {"critic": {"device": expected, "dtype": "bfloat16"}}
    gpus = read_run_record("rank@backend-with_info")["machine"]["gpus"]
    assert len(gpus) == torch.cuda.device_count() and all(g["name"] and g["memory_gb"] > 0 for g in gpus)


@pytest.mark.skipif(shutil.which("lscpu") is None, reason="lscpu (util-linux) names the CPU independently")
def test_the_cpu_is_named_by_its_name_and_type_as_lscpu_names_it():
    """A run record, a point and a benchmark name the CPU the same way: "AMD EPYC" alone is both a Zen 1 and a
    Zen 3, whose float kernels differ, so the family and model go with the name."""
    lines = subprocess.check_output(["lscpu"], text=True).splitlines()
    listed = {key.strip(): value.strip() for key, _, value in (line.partition(":") for line in lines)}
    found = cpu()
    assert found["cpu"] == listed["Model name"]
    assert (found["family"], found["model"]) == (listed.get("CPU family"), listed.get("Model"))
    assert set(found["vector_instructions"]) <= set(listed.get("Flags", "").split())


@given(seconds=st.floats(0, 1e6, allow_nan=False))
def test_the_save_interval_is_read_from_the_environment_or_is_fifteen_minutes(seconds):
    assert save_every_seconds({"SWEETFLOW_SAVE_EVERY_S": repr(seconds)}) == seconds
    assert save_every_seconds({}) == 900.0


@pytest.mark.parametrize("value", ["", "15m", "-1", "nan", "inf"])
def test_a_save_interval_that_is_not_a_number_of_seconds_is_refused_naming_the_variable(value):
    with pytest.raises(ParamsError, match=f"SWEETFLOW_SAVE_EVERY_S={value!r}: not a number of seconds"):
        save_every_seconds({"SWEETFLOW_SAVE_EVERY_S": value})
