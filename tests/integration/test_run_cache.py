"""DVC's run cache on a copy of the reproduced project: a configuration run once is restored, never retrained."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
import yaml

from sweetflow.core.artifacts import content_hash
from sweetflow.dag import load_stages
from tests.support.project import dvc_status, run
from tests.support.reproduced import copy_of

# B is run for the backend's RFT policy and its evaluation only: what is shown is the same for every stage,
# and the frontend's and the report's reruns would only lengthen the suite.
TARGET = "evaluate_policy@backend-rft"
RFT_READERS = ("policy@backend-rft", TARGET)


def set_rft_learning_rate(project: Path, value: float) -> None:
    params = yaml.safe_load((project / "params.yaml").read_text())
    params["policies"]["rft"]["learning_rate"] = value
    (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))


def ran(output: str) -> list[str]:
    return re.findall(r"Running stage '([^']+)'", output)


def restored(output: str) -> list[str]:
    return re.findall(r"Stage '([^']+)' is cached - skipping run, checking out outputs", output)


def outputs_of(project: Path, stages: tuple[str, ...]) -> dict[str, str]:
    by_name = {s.name: s for s in load_stages(project)}
    return {
        out: content_hash(project / out) for name in stages for out in by_name[name].outs if (project / out).exists()
    }


@pytest.fixture(scope="module")
def two_configurations(repro_project: Path, tmp_path_factory) -> tuple[Path, float, str, dict[str, str]]:
    """The reproduced project after A → B (RFT's learning rate changed), its params set back to A; the
    seconds B took, its params.yaml text and the hashes of the outputs B made."""
    project = copy_of(repro_project, tmp_path_factory.mktemp("run-cache") / "project")
    a = yaml.safe_load((project / "params.yaml").read_text())["policies"]["rft"]["learning_rate"]
    set_rft_learning_rate(project, a * 2)
    b_params = (project / "params.yaml").read_text()
    started = time.monotonic()
    b = run(["dvc", "repro", TARGET], project).stdout
    b_seconds = time.monotonic() - started
    assert set(RFT_READERS) <= set(ran(b))
    b_outputs = outputs_of(project, RFT_READERS)
    set_rft_learning_rate(project, a)
    return project, b_seconds, b_params, b_outputs


def test_switching_a_parameter_back_restores_its_outputs_from_the_run_cache(two_configurations, repro_project):
    """A → B → A: the second A runs nothing; every output of the stages B reran is A's again."""
    project, b_seconds, _, _ = two_configurations
    started = time.monotonic()
    again = run(["dvc", "repro", TARGET], project).stdout
    seconds = time.monotonic() - started
    assert ran(again) == [] and set(RFT_READERS) <= set(restored(again))
    assert outputs_of(project, RFT_READERS) == outputs_of(repro_project, RFT_READERS)
    assert dvc_status(project) == {}
    assert seconds < b_seconds, (seconds, b_seconds)  # restoring costs less than training; figures in the notes


def test_dvc_exp_run_of_a_configuration_already_run_restores_it(two_configurations, tmp_path):
    project = copy_of(two_configurations[0], tmp_path / "exp")
    run(["dvc", "repro", TARGET], project)  # back at A
    run(["git", "add", "-A"], project)
    run(["git", "commit", "-qm", "A", "--allow-empty"], project)
    learning_rate = yaml.safe_load(two_configurations[2])["policies"]["rft"]["learning_rate"]
    exp = run(["dvc", "exp", "run", "-S", f"policies.rft.learning_rate={learning_rate}", TARGET], project).stdout
    assert ran(exp) == [] and set(RFT_READERS) <= set(restored(exp))


def test_a_teammate_restores_a_configuration_from_the_shared_run_cache_without_training(two_configurations, tmp_path):
    """The origin ran A and B and shares its run cache (`sweetflow share`: DVC 3's `push --run-cache` pushes
    the entries, not the outputs of those the workspace does not hold); the teammate's clone, at A,
    switches to B and `dvc repro --pull` restores it, fetching its outputs."""
    project, _, b_params, b_outputs = two_configurations
    origin = copy_of(project, tmp_path / "origin")
    run(["dvc", "repro", TARGET], origin)  # at A
    run(["dvc", "remote", "add", "-d", "shared", str(tmp_path / "remote")], origin)
    run(["git", "add", "-A"], origin)
    run(["git", "commit", "-qm", "A, and the team's remote", "--allow-empty"], origin)
    run(["sweetflow", "share"], origin)

    clone = tmp_path / "teammate"
    run(["git", "clone", "-q", str(origin), str(clone)], tmp_path)
    run(["dvc", "pull", "-q", "--run-cache"], clone)
    assert dvc_status(clone) == {}
    (clone / "params.yaml").write_text(b_params)  # B, which only the origin ever ran
    b = run(["dvc", "repro", "--pull", TARGET], clone).stdout
    assert ran(b) == [] and set(RFT_READERS) <= set(restored(b))
    assert outputs_of(clone, RFT_READERS) == b_outputs
    assert dvc_status(clone, TARGET) == {}
