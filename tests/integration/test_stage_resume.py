"""Stage `policy` killed between seeds: the rerun keeps the seeds the killed run finished (and a preference
method's reference log-probs, which a run at other seeds or another learning rate reads too), trains only the
rest, and writes what an uninterrupted run writes; in one process and in two under `accelerate launch`. Stage
`critic` killed after its warm-up: the rerun trains only the critic (likewise in one process and in two). Stage
`base_model` killed inside its training: the rerun goes on from its last saved state. How a training resumes:
tests/unit/rl/test_run_state.py."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import yaml

from sweetflow.core.artifacts import content_hash
from tests.support.interrupted import saved_step
from tests.support.project import SMALL_MODEL, make_project, merge, run, tool_env

PARAMS = {
    "backend": {"tasks": {"n_train": 24, "n_test": 2, "n_val": 1, "seed": 3}, "model": SMALL_MODEL},
    "training": {"threads": 1},
    "rollout": {"agent": "half_expert", "samples_per_task": 2},
    "policies": {"rft": {"epochs": 2, "min_reward": {"backend": 1.0}}, "mtdpo": {"epochs": 1}},
    "critics": {"with_info": {"warmup_epochs": 1}},
    "seeds": [0, 1, 2],
}
# Two gloo processes on the CPUs, as tests/integration/test_distributed_training.py launches them.
TWO_PROCESSES = {"accelerate_config": "configs/accelerate/cpu2.yaml", "processes": 2}
KEPT = Path(".sweetflow/checkpoints")


@pytest.fixture(scope="module")
def upstream(tmp_path_factory) -> Path:
    """A project whose policy stage has its inputs: tasks, demonstrations, the tiny base model, a scripted rollout."""
    project = make_project(tmp_path_factory.mktemp("upstream") / "project", PARAMS)
    for stage in ("tasks", "demos", "base_model", "rollout", "trajectory_pairs"):
        run([sys.executable, "-m", f"stages.{stage}", "backend"], project)
    return project


# One process (MT-DPO, whose reference log-probs are kept too) and two (RFT): the seeds are kept the same way
# for every method, so each path runs once.
@pytest.mark.parametrize(("method", "processes"), [("rft", 2), ("mtdpo", 1)])
def test_a_policy_stage_killed_after_its_first_seed_trains_only_the_others_again(upstream, tmp_path, method, processes):
    policy = [sys.executable, "-m", "stages.policy", "backend", method]
    output, report = Path(f"models/backend/policies/{method}"), Path(f"reports/backend/stages/policies/{method}")
    project = tmp_path / "killed"
    shutil.copytree(upstream, project, symlinks=True)
    env = tool_env()
    if processes == 2:  # the policy stage alone relaunches itself; the stages above ran as one process
        _set_params(project, {"training": TWO_PROCESSES})
        env["ACCELERATE_USE_CPU"] = "1"
    clean = tmp_path / "clean"
    shutil.copytree(project, clean, symlinks=True)

    proc = subprocess.Popen(policy, cwd=project, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None and not _kept(project, method):
        time.sleep(0.02)
    _kill_with_children(proc)
    assert _kept(project, method) == ["seed0"], "the kill should land after the first seed, before the second is kept"
    assert not (project / output).exists()  # nothing at the declared output until every seed is in

    resumed = subprocess.run(policy, cwd=project, env=env, capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    assert f"policy@backend-{method}: seed 0 restored" in resumed.stderr
    assert ("reference log-probs: read from" in resumed.stderr) == (method == "mtdpo")
    assert "seed 1 restored" not in resumed.stderr and "seed 2 restored" not in resumed.stderr
    # The seeds are cleared once the output holds them all; what every seed shares (MT-DPO's reference log-probs)
    # stays for a run of the same policy at other seeds.
    left = [p.name for p in (project / KEPT).iterdir()]
    assert len(left) == (method == "mtdpo") and all(n.startswith(f"policy@backend-{method}-shared-") for n in left)

    subprocess.run(policy, cwd=clean, env=env, check=True, capture_output=True, timeout=600)
    kept = [f"seed{seed}" for seed in (0, 1, 2)] + (["reference_logps.pt"] if method == "mtdpo" else [])
    for name in kept:
        assert content_hash(project / output / name) == content_hash(clean / output / name)
    metrics = [json.loads((root / report / "metrics.json").read_text()) for root in (project, clean)]
    assert metrics[0] == metrics[1] and set(metrics[0]["seeds"]) == {"0", "1", "2"}
    assert content_hash(project / report / "plots") == content_hash(clean / report / "plots")
    if method == "mtdpo":  # a run at one of those seeds alone (a point) reads them, and trains that seed alike
        _set_params(project, {"seeds": [1]})
        alone = subprocess.run(policy, cwd=project, env=env, capture_output=True, text=True, timeout=600)
        assert alone.returncode == 0 and "reference log-probs: read from" in alone.stderr, alone.stderr
        assert content_hash(project / output / "seed1") == content_hash(clean / output / "seed1")
        # A run at another learning rate (a tuning's next trial) reads them too: they depend on the sequences, not
        # on how the policy trains. An NLL term over the responses alone segments them anew (the default covers the
        # whole dialogue): a pass of its own.
        shared = lambda: list((project / KEPT).glob(f"policy@backend-{method}-shared-*"))  # noqa: E731
        _set_params(project, {"policies": {method: {"learning_rate": 3e-4}}})
        retuned = subprocess.run(policy, cwd=project, env=env, capture_output=True, text=True, timeout=600)
        assert retuned.returncode == 0 and "reference log-probs: read from" in retuned.stderr, retuned.stderr
        assert len(shared()) == 1
        _set_params(project, {"policies": {method: {"nll_span": "response"}}})
        resegmented = subprocess.run(policy, cwd=project, env=env, capture_output=True, text=True, timeout=600)
        assert resegmented.returncode == 0 and "reference log-probs: read from" not in resegmented.stderr
        assert len(shared()) == 2


@pytest.mark.parametrize("processes", [1, 2])
def test_a_critic_stage_killed_after_its_warm_up_trains_only_the_critic_again(upstream, tmp_path, processes):
    project, clean = tmp_path / "killed", tmp_path / "clean"
    shutil.copytree(upstream, project, symlinks=True)
    env = tool_env()
    if processes == 2:  # every process warms up, then every process trains the critic from the warmed model
        _set_params(project, {"training": TWO_PROCESSES})
        env["ACCELERATE_USE_CPU"] = "1"
    shutil.copytree(project, clean, symlinks=True)
    critic = [sys.executable, "-m", "stages.critic", "backend", "with_info"]
    output, report = Path("models/backend/critics/with_info"), Path("reports/backend/stages/critics/with_info")

    proc = subprocess.Popen(critic, cwd=project, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    warmed = lambda: list((project / KEPT).glob("critic@backend-with_info-warmup-*/result.json"))  # noqa: E731
    while time.monotonic() < deadline and proc.poll() is None and not warmed():
        time.sleep(0.02)
    _kill_with_children(proc)
    assert warmed() and not (project / output).exists(), "the kill should land after the warm-up, before the output"

    resumed = subprocess.run(critic, cwd=project, env=env, capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    assert "critic@backend-with_info: the warm-up restored" in resumed.stderr
    # The critic's own work is cleared once the output is written; the warm-up stays, for its other rates.
    left = sorted(d.name for d in (project / KEPT).glob("critic@*"))
    assert left and all(name.split("-")[2].startswith("warmup") for name in left), left
    assert len(warmed()) == 1

    subprocess.run(critic, cwd=clean, env=env, check=True, capture_output=True, timeout=600)
    assert content_hash(project / output) == content_hash(clean / output)
    metrics = [json.loads((root / report / "metrics.json").read_text()) for root in (project, clean)]
    assert metrics[0] == metrics[1] and metrics[0]["warmup_dialogues"] > 0

    if processes == 1:  # another learning rate warms up from the kept warm-up and ends as a fresh run at that rate
        fresh = tmp_path / "fresh"
        shutil.copytree(upstream, fresh, symlinks=True)
        for root in (project, fresh):
            _set_params(root, {"critics": {"with_info": {"learning_rate": 0.003}}})
        other = subprocess.run(critic, cwd=project, env=env, capture_output=True, text=True, timeout=600)
        assert other.returncode == 0 and "the warm-up restored" in other.stderr, other.stderr
        subprocess.run(critic, cwd=fresh, env=env, check=True, capture_output=True, timeout=600)
        assert content_hash(project / output) == content_hash(fresh / output) != content_hash(clean / output)


def test_a_base_model_stage_killed_inside_its_training_resumes_there_and_ends_as_an_uninterrupted_run(
    upstream, tmp_path
):
    output, report = Path("models/backend/base"), Path("reports/backend/stages/base_model")
    project, clean = tmp_path / "killed", tmp_path / "clean"
    shutil.copytree(upstream, project, symlinks=True)
    shutil.rmtree(project / output)
    shutil.rmtree(project / report)
    _set_params(project, {"backend": {"model": {"epochs": 4}}})  # 12 steps
    shutil.copytree(project, clean, symlinks=True)
    base_model, env = [sys.executable, "-m", "stages.base_model", "backend"], tool_env()
    env["SWEETFLOW_SAVE_EVERY_S"] = "0"  # its state after every step, so that the kill lands inside the training

    proc = subprocess.Popen(base_model, cwd=project, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None and _saved_step(project, "base_model") < 2:
        time.sleep(0.02)
    _kill_with_children(proc)
    saved = _saved_step(project, "base_model")
    assert saved >= 2 and not (project / output).exists(), "the kill should land inside the training"

    resumed = subprocess.run(base_model, cwd=project, env=env, capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    assert "sft: resuming at step" in resumed.stderr
    assert not list((project / KEPT).glob("base_model@*"))  # its state removed once the training ended

    subprocess.run(base_model, cwd=clean, env=tool_env(), check=True, capture_output=True, timeout=600)
    assert content_hash(project / output) == content_hash(clean / output)
    metrics = [json.loads((root / report / "metrics.json").read_text()) for root in (project, clean)]
    assert metrics[0] == metrics[1]
    assert content_hash(project / report / "plots") == content_hash(clean / report / "plots")


def _saved_step(project: Path, stage: str) -> int:
    """The step of the training state the stage last saved (0: none yet)."""
    return max((saved_step(state) for state in (project / KEPT).glob(f"{stage}@*.training")), default=0)


def _set_params(project: Path, changes: dict) -> None:
    """Change the project's params (the stages run next read them)."""
    params = yaml.safe_load((project / "params.yaml").read_text())
    (project / "params.yaml").write_text(yaml.safe_dump(merge(params, changes), sort_keys=False))


def _kept(project: Path, method: str) -> list[str]:
    """The seeds kept whole so far (not a seed being written, or the state of one being trained)."""
    return sorted(p.parent.name for p in (project / KEPT).glob(f"policy@backend-{method}-*/seed*/result.json"))


def _kill_with_children(proc: subprocess.Popen) -> None:
    """SIGKILL the stage and every process it started: `accelerate launch`'s workers outlive their launcher."""
    try:
        stage = psutil.Process(proc.pid)
        family = [stage, *stage.children(recursive=True)]
    except psutil.NoSuchProcess:  # it ended by itself; the assertions after the kill say how
        return
    for p in family:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(family, timeout=30)
    proc.wait()
