"""The DAG on a real SLURM: Snakemake's SLURM executor submits each rule as one `sbatch` job asking for
what its stage declares in dvc.yaml, on the single-node cluster of scripts/slurm.sh, and the outputs
equal DVC's. `make test-slurm` runs it (`make test` leaves out tests marked slurm)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from sweetflow.core.artifacts import content_hash
from sweetflow.dag import StageSpec, load_stages, rule_name
from tests.integration.test_engines import upstream
from tests.support.project import ROOT, SMALL_PARAMS, make_project, run, tool_env
from tests.support.reproduced import CHECKPOINT_FILES, DATA_OUTS, METRICS

pytestmark = pytest.mark.slurm

# The backend's SWEET-RL chain (both critics: the policy reads every critic's step pairs) through the
# policy's evaluation: stages with GPUs and without, one job at a time on this small node.
TARGET = "evaluate_policy@backend-sweet"


@pytest.fixture(scope="module")
def cluster():
    """The cluster's state directory; started for these tests if it was down, and then stopped."""
    if importlib.util.find_spec("snakemake_executor_plugin_slurm") is None:
        pytest.skip("snakemake-executor-plugin-slurm is not installed: `make test-slurm` installs it (extra slurm)")
    script = ["bash", str(ROOT / "scripts/slurm.sh")]
    was_up = subprocess.run([*script, "status"], check=False, capture_output=True).returncode == 0
    started = subprocess.run([*script, "start"], check=False, capture_output=True, text=True, timeout=900)
    if started.returncode != 0:
        pytest.skip(f"SLURM could not be started: {started.stderr.strip() or started.stdout.strip()}")
    conf = subprocess.run([*script, "env"], capture_output=True, text=True, check=True).stdout
    conf = Path(conf.strip().removeprefix("export SLURM_CONF="))
    previous = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = str(conf)  # for every SLURM command the tests and Snakemake run
    yield conf.parent.parent
    if previous is None:
        del os.environ["SLURM_CONF"]
    else:
        os.environ["SLURM_CONF"] = previous
    if not was_up:
        subprocess.run([*script, "stop"], check=True, capture_output=True)


def slurm_test_profile(project: Path, state: Path, stages: list[StageSpec]) -> Path:
    """workflow/profiles/slurm with this cluster as the site: its partitions file, no accounts, and
    status polling through squeue (sacct needs slurmdbd here). This node is smaller than the paper
    scale the stages declare, so requests are capped to it, the way a site with small nodes would."""
    profile = yaml.safe_load((ROOT / "workflow/profiles/slurm/config.yaml").read_text())
    partitions = yaml.safe_load((state / "partitions.yaml").read_text())["partitions"]
    node_mem = min(p["max_mem_mb"] for p in partitions.values())
    profile.update(
        {
            "slurm-partition-config": str(state / "partitions.yaml"),
            "slurm-no-account": True,
            "slurm-status-command": "squeue",
            "slurm-init-seconds-before-status-checks": 10,
            "max-threads": min(p["max_threads"] for p in partitions.values()),
            "set-resources": {s.rule_name: {"mem_mb": node_mem} for s in stages if s.resources.mem_mb > node_mem},
            "latency-wait": 5,
        }
    )
    directory = project / "profiles/slurm-test"
    directory.mkdir(parents=True)
    (directory / "config.yaml").write_text(yaml.safe_dump(profile))
    return directory


def slurm_jobs(workdir: Path) -> list[dict]:
    """The jobs slurmctld holds (it keeps finished ones for MinJobAge) that ran in `workdir`."""
    jobs = json.loads(subprocess.run(["squeue", "--json"], capture_output=True, text=True, check=True).stdout)["jobs"]
    return [j for j in jobs if j["current_working_directory"] == str(workdir)]


def completion_records() -> dict[str, dict]:
    """Every finished job in the cluster's job-completion file, as `sacct --completion` reads it."""
    fields = ["JobID", "Partition", "State", "ExitCode", "WorkDir"]
    out = subprocess.run(
        ["sacct", "--completion", "--parsable2", "--noheader", f"--format={','.join(fields)}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return {row.split("|")[0]: dict(zip(fields, row.split("|"))) for row in out.splitlines() if row}


def test_snakemake_on_slurm_runs_one_job_per_rule_with_the_declared_resources_and_matches_dvc(
    cluster: Path, tmp_path: Path
):
    dvc_project = make_project(tmp_path / "dvc", SMALL_PARAMS)
    snake_project = make_project(tmp_path / "slurm", SMALL_PARAMS)
    stages = upstream(load_stages(snake_project), TARGET)
    profile = slurm_test_profile(tmp_path, cluster, stages)
    node_cpus = yaml.safe_load((profile / "config.yaml").read_text())["max-threads"]
    # DVC runs the same part of the DAG meanwhile: the SLURM run waits on polling most of the time.
    dvc = subprocess.Popen(
        ["dvc", "repro", "--quiet", TARGET],
        cwd=dvc_project,
        env=tool_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    started = time.monotonic()
    run(["snakemake", "--profile", str(profile), rule_name(TARGET)], snake_project, timeout=3600)
    print(f"snakemake on SLURM: {len(stages)} rules in {time.monotonic() - started:.0f} s")
    assert dvc.wait(timeout=3600) == 0, dvc.stdout.read()

    # One SLURM job per rule, each as its stage declares: the GPU stages in the partition with GPUs.
    jobs = slurm_jobs(snake_project)
    by_rule = {}
    for job in jobs:
        by_rule.setdefault(job["comment"].removeprefix("rule_"), []).append(job)
    assert sorted(by_rule) == sorted(s.rule_name for s in stages)
    assert all(len(ran) == 1 for ran in by_rule.values()), {r: len(ran) for r, ran in by_rule.items()}
    for spec in stages:
        job = by_rule[spec.rule_name][0]
        declared = spec.resources
        assert job["job_state"] == "COMPLETED", (spec.name, job["job_state"])
        assert job["time_limit"] == declared.runtime, spec.name
        assert job["cpus"] == min(declared.cpus, node_cpus), spec.name  # the profile's max-threads
        if declared.gpus:
            assert (job["partition"], job["tres_per_job"]) == ("gpu", f"gres:gpu:{declared.gpus}"), spec.name
        else:
            assert (job["partition"], job["tres_per_job"]) == ("cpu", ""), spec.name
    assert {s.resources.gpus > 0 for s in stages} == {True, False}  # both kinds were checked
    records = completion_records()
    for job in jobs:
        record = records[str(job["job_id"])]
        assert (record["State"], record["ExitCode"], record["WorkDir"]) == ("COMPLETED", "0:0", str(snake_project))

    outs = [Path(out) for spec in stages for out in spec.outs]
    compared = [p for p in DATA_OUTS + METRICS + CHECKPOINT_FILES if any(Path(p).is_relative_to(out) for out in outs)]
    assert len(compared) >= 15
    for path in compared:
        assert content_hash(snake_project / path) == content_hash(dvc_project / path), path
