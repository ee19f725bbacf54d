"""The turn limit (`episodes.max_turns`) as agents meet it, with 3 turns as the test project runs:
the policy's instructions state the limit in words, and each scripted agent answers by its last turn.
Real episodes: the backend's in the sandbox with the scripted human, the frontend's rendered by
Chromium with the scripted designer."""

from __future__ import annotations

import json

import pytest

from sweetflow.backend.agents import NoAsk, ScriptedExpert
from sweetflow.backend.domain import sandbox_runtime
from sweetflow.backend.sandbox.pool import Sandbox
from sweetflow.backend.scoring import check_references
from sweetflow.backend.simulators import ScriptedHuman
from sweetflow.backend.tasks.procedural import generate_tasks
from sweetflow.dialogue import AGENT, ANSWER_MARKER
from sweetflow.domain import get_domain
from sweetflow.frontend.agents import DesignExpert, DesignNoAsk
from sweetflow.frontend.render import RenderPool
from sweetflow.frontend.tasks import generate_frontend_tasks
from sweetflow.rollout.engine import Checkpoint, run_episodes
from sweetflow.views import policy_instructions, turn_limit
from tests.support.browser import TAILWIND
from tests.support.params import episode_params, params_with, sandbox_params

LIMIT = 3


def test_the_instructions_state_the_limit_in_words_and_ten_exactly_as_before():
    assert turn_limit(3) == "You have at most three messages; the last one counts as your answer."
    assert turn_limit(1) == "You have at most one message; the last one counts as your answer."
    assert turn_limit(40) == "You have at most 40 messages; the last one counts as your answer."
    for domain in ("backend", "frontend"):
        ten, three = policy_instructions(domain, 10), policy_instructions(domain, 3)
        assert ten.endswith(" You have at most ten messages; the last one counts as your answer.")
        assert three == ten.replace("at most ten messages", "at most three messages")


def run(tasks: list[dict], agent, runtime, max_turns: int, tmp_path) -> list[dict]:
    checkpoint = Checkpoint(tmp_path / f"{type(agent).__name__}-{max_turns}.jsonl")
    return run_episodes(tasks, 1, agent, runtime, episode_params(max_turns=max_turns), 0, checkpoint)


def system_prompts(record: dict) -> set[str]:
    """The system message of every agent turn's prompt (the JSON of the policy's chat)."""
    return {json.loads(t["prompt"])[0]["content"] for t in record["dialogue"] if t["role"] == AGENT}


def assert_answered_by_the_limit(limited: list[dict], unlimited: list[dict], domain: str) -> None:
    """With LIMIT turns each episode answers (the marker, not the limit, ends it) at the turn it
    answered in ten, or at the last turn if that was later; its prompts said LIMIT, and its record
    keeps the limit for whatever rebuilds them."""
    assert [r["n_turns"] for r in limited] == [min(r["n_turns"], LIMIT) for r in unlimited]
    assert all(r["answered"] and r["ended_by"] == "answer" for r in limited + unlimited)
    assert all(r["dialogue"][-1]["content"].startswith(ANSWER_MARKER) for r in limited)
    assert {p for r in limited for p in system_prompts(r)} == {policy_instructions(domain, LIMIT)}
    assert {p for r in unlimited for p in system_prompts(r)} == {policy_instructions(domain, 10)}
    assert {r["max_turns"] for r in limited} == {LIMIT} and {r["max_turns"] for r in unlimited} == {10}


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(sandbox_params(workers=2)) as sb:
        yield sb


def test_backend_scripted_agents_answer_by_the_last_turn(sandbox, tmp_path):
    _, test = generate_tasks(0, 12, seed=2)
    tasks = [{**t, "expected": c.expected} for t, c in zip(test, check_references(test, sandbox))]
    runtime = sandbox_runtime(ScriptedHuman(), sandbox)
    expert = run(tasks, ScriptedExpert(1.0), runtime, 10, tmp_path)
    assert max(r["n_turns"] for r in expert) > LIMIT  # some expert asks for longer than the limit allows
    assert_answered_by_the_limit(run(tasks, ScriptedExpert(1.0), runtime, LIMIT, tmp_path), expert, "backend")
    no_ask = run(tasks, NoAsk(), runtime, LIMIT, tmp_path)
    assert_answered_by_the_limit(no_ask, run(tasks, NoAsk(), runtime, 10, tmp_path), "backend")
    assert {r["n_turns"] for r in no_ask} == {1}


def test_frontend_scripted_agents_answer_by_the_last_turn(tmp_path):
    """The designer's replies keep the expert showing pages (at ten turns it runs longer): at the
    limit it answers with its page instead of showing it once more."""
    params = params_with({"frontend": {"scoring": {"render": {"tailwind_css": str(TAILWIND)}}}})
    _, tasks = generate_frontend_tasks(0, 3, seed=3)
    # The scorer compares each answer with its target's screenshot, as the tasks stage takes it; the
    # description page's scores only decide wins, which this test does not read.
    references = {"reference_similarity": 0.0, "reference_design": 0.0}
    tasks = [{**t, "target_png": png, **references} for t, png in zip(tasks, render_targets(params, tasks))]
    with get_domain("frontend").open(params.frontend) as runtime:
        expert = run(tasks, DesignExpert(1.0), runtime, LIMIT, tmp_path)
        no_ask = run(tasks, DesignNoAsk(), runtime, LIMIT, tmp_path)
    assert [r["n_turns"] for r in expert] == [LIMIT] * len(tasks)
    assert [r["n_turns"] for r in no_ask] == [1] * len(tasks)
    for records in (expert, no_ask):
        assert all(r["answered"] and r["ended_by"] == "answer" for r in records)
        assert all(r["dialogue"][-1]["content"].startswith(ANSWER_MARKER) for r in records)
        assert {p for r in records for p in system_prompts(r)} == {policy_instructions("frontend", LIMIT)}


def render_targets(params, tasks: list[dict]) -> list[bytes | None]:
    with RenderPool(params.frontend.scoring.render) as pool:
        return pool.render_many([t["ground_truth"] for t in tasks], desc=None)
