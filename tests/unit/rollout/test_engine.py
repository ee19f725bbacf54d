"""The rollout engine: protocol, batching, faults, and resuming after a SIGKILL."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from sweetflow.backend.agents import ScriptedExpert
from sweetflow.backend.domain import sandbox_runtime
from sweetflow.backend.sandbox.pool import Sandbox
from sweetflow.backend.scoring import check_references
from sweetflow.backend.simulators import ScriptedHuman
from sweetflow.backend.tasks.procedural import generate_tasks
from sweetflow.core.tables import to_frame
from sweetflow.dialogue import AGENT, HUMAN, AgentTurn, ContextOverflow
from sweetflow.rollout.engine import Checkpoint, TooManyFailures, collect, run_episodes
from tests.support.params import episode_params, params_with, sandbox_params
from tests.support.project import make_project, run, tool_env


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(sandbox_params(workers=2)) as sb:
        yield sb


@pytest.fixture(scope="module")
def tasks(sandbox):
    _, test = generate_tasks(0, 12, seed=2)
    return [{**t, "expected": c.expected} for t, c in zip(test, check_references(test, sandbox))]


class Chatter:
    """Never answers: asks the same vague thing every turn."""

    def __init__(self):
        self.batch_sizes = []

    def act(self, views):
        self.batch_sizes.append(len(views))
        return [AgentTurn(prompt="p", raw="Anything else?", message="Anything else?") for _ in views]


class Flaky:
    """Fails every episode of the tasks it is given, as an endpoint that keeps erroring on them would."""

    def __init__(self, failing: set[str]):
        self.failing = failing

    def act(self, views):
        return [
            RuntimeError("HTTP 503")
            if v.task_id in self.failing
            else AgentTurn("p", "I WANT TO ANSWER: x", "I WANT TO ANSWER: x")
            for v in views
        ]


def test_expert_episodes_alternate_and_succeed(tasks, sandbox, tmp_path):
    records = run_episodes(
        tasks,
        2,
        ScriptedExpert(1.0),
        sandbox_runtime(ScriptedHuman(), sandbox),
        episode_params(),
        0,
        Checkpoint(tmp_path / "c.jsonl"),
    )
    frame = to_frame(records)
    assert frame.height == 24 and frame.select("task_id", "sample").is_unique().all()
    assert frame["success"].all() and frame["answered"].all()
    # Each test's output is kept beside the task's expected one: an expert's equal them all.
    expected = {t["task_id"]: list(t["expected"]) for t in tasks}
    assert all(outs == expected[t] for t, outs in frame.select("task_id", "test_outputs").iter_rows())
    for dialogue in frame["dialogue"]:
        roles = [t["role"] for t in dialogue]
        assert roles == [AGENT, HUMAN] * (len(roles) // 2) + [AGENT]
        assert all(t["prompt"] for t in dialogue if t["role"] == AGENT)


def test_an_episode_without_the_marker_ends_at_the_turn_limit(tasks, sandbox, tmp_path):
    agent = Chatter()
    records = run_episodes(
        tasks[:3],
        1,
        agent,
        sandbox_runtime(ScriptedHuman(), sandbox),
        episode_params(max_turns=4),
        0,
        Checkpoint(tmp_path / "c.jsonl"),
    )
    assert [r["n_turns"] for r in records] == [4, 4, 4]
    assert [r["answered"] for r in records] == [False] * 3
    assert [r["ended_by"] for r in records] == ["max_turns"] * 3
    assert all(r["answer"] == "Anything else?" and r["reward"] == 0.0 for r in records)
    assert all(r["test_outputs"] == [None] * len(t["test_cases"]) for r, t in zip(records, tasks))  # nothing to call
    assert agent.batch_sizes == [3, 3, 3, 3]  # every live episode in one agent call per turn


def test_an_episode_whose_dialogue_fills_the_context_ends_with_its_last_message(tasks, sandbox, tmp_path):
    class Cramped:
        """Says a function on its first turn; its context is full on the second."""

        def act(self, views):
            return [
                AgentTurn("p", "def f(): pass", "def f(): pass") if v.turn == 0 else ContextOverflow("full")
                for v in views
            ]

    records = run_episodes(
        tasks[:2],
        1,
        Cramped(),
        sandbox_runtime(ScriptedHuman(), sandbox),
        episode_params(),
        0,
        Checkpoint(tmp_path / "c.jsonl"),
    )
    assert [(r["ended_by"], r["answer"], r["n_turns"], r["failure"]) for r in records] == [
        ("context", "def f(): pass", 1, None)
    ] * 2
    assert to_frame(records)["ended_by"].to_list() == ["context", "context"]


def test_failed_episodes_are_recorded_and_the_stage_fails_past_the_share(tasks, tmp_path):
    flaky = Flaky({t["task_id"] for t in tasks[::2]})  # half the tasks
    params = params_with({"backend": {"scoring": {"workers": 1}}, "episodes": {"max_failure_share": 0.1}})
    with pytest.raises(TooManyFailures, match="episodes failed"):
        collect(tasks, flaky, params, "backend", 1, 0, tmp_path / "c.jsonl", "test")
    kept = Checkpoint(tmp_path / "c.jsonl").load()
    assert kept and all(r["failure"] is None for r in kept.values())  # failures are retried on resume
    lenient = params_with({"backend": {"scoring": {"workers": 1}}, "episodes": {"max_failure_share": 1.0}})
    frame = collect(tasks, flaky, lenient, "backend", 1, 0, tmp_path / "c.jsonl", "test")
    failed = frame.filter(pl.col("failure").is_not_null())
    assert failed.height == 6 and failed["failure"].str.contains("HTTP 503").all()


def test_a_simulator_fault_fails_only_its_episode(tasks, sandbox, tmp_path):
    class Grumpy(ScriptedHuman):
        def reply(self, task, messages):
            if task["task_id"] == tasks[0]["task_id"]:
                raise ConnectionError("simulator went away")
            return super().reply(task, messages)

    records = run_episodes(
        tasks[:4],
        1,
        ScriptedExpert(1.0),
        sandbox_runtime(Grumpy(), sandbox),
        episode_params(),
        0,
        Checkpoint(tmp_path / "c.jsonl"),
    )
    assert records[0]["failure"] == "simulator: simulator went away"
    assert all(r["failure"] is None and r["success"] for r in records[1:])


def test_a_torn_checkpoint_line_is_ignored(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps({"task_id": "t", "sample": 0, "failure": None}) + '\n{"task_id": "t", "sam')
    assert list(Checkpoint(path).load()) == [("t", 0)]


def test_rollout_killed_mid_run_resumes_without_loss_or_duplicates(tmp_path):
    params = {
        "backend": {"tasks": {"n_train": 240, "n_test": 2}, "scoring": {"workers": 2}},
        "rollout": {"agent": "half_expert", "samples_per_task": 3},
        "episodes": {"flush_every": 8},
    }
    project = make_project(tmp_path / "p", params)
    run([sys.executable, "-m", "stages.tasks", "backend"], project)
    checkpoints = project / ".sweetflow/checkpoints"
    proc = subprocess.Popen(
        [sys.executable, "-m", "stages.rollout", "backend"],
        cwd=project,
        env=tool_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and _saved(checkpoints) < 80:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    saved = _saved(checkpoints)
    assert 0 < saved < 720, "the kill should land mid-run"
    assert not (project / "data/backend/rollout").exists()  # no half artifact at the declared path

    resumed = run([sys.executable, "-m", "stages.rollout", "backend"], project)
    assert f"resuming: {saved} of 720 episodes already done" in resumed.stderr
    frame = pl.read_parquet(project / "data/backend/rollout/trajectories.parquet")
    assert frame.height == 720 and frame.select("task_id", "sample").is_unique().all()
    assert not list(checkpoints.glob("*.jsonl"))  # cleaned up once the output is whole

    # The resumed run equals an uninterrupted one (scripted agents are deterministic by seed).
    clean = make_project(tmp_path / "clean", params)
    run([sys.executable, "-m", "stages.tasks", "backend"], clean)
    run([sys.executable, "-m", "stages.rollout", "backend"], clean)
    assert frame.equals(pl.read_parquet(clean / "data/backend/rollout/trajectories.parquet"))


def _saved(checkpoints: Path) -> int:
    """Episodes whose line was written whole: a kill can land in the middle of the last one's write."""
    return sum(p.read_text().count("\n") for p in checkpoints.glob("*.jsonl")) if checkpoints.exists() else 0
