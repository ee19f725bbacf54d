"""Scripted agents: the expert asks what it needs; skill makes it skip; no_ask never asks."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sweetflow.backend.agents import NoAsk, ScriptedExpert, render_answer
from sweetflow.backend.tasks.procedural import generate_tasks
from sweetflow.dialogue import ANSWER_MARKER, HUMAN, EpisodeView, Message, final_answer
from sweetflow.views import policy_chat

_, TASKS = generate_tasks(0, 28, seed=5)


def view(task: dict, messages=(), seed: int = 0) -> EpisodeView:
    return EpisodeView(
        task["task_id"],
        task["problem_description"],
        list(messages),
        seed,
        task["facts"],
        task["template"],
        max_turns=10,
    )


def test_expert_at_full_skill_asks_about_every_fact_then_answers():
    expert = ScriptedExpert(1.0)
    for task in TASKS:
        asked = [t for turn in expert.plan(view(task)) for t in turn]
        assert asked == [f["topic"] for f in task["facts"]]


@settings(max_examples=50)
@given(st.integers(min_value=0, max_value=10**9))
def test_plan_is_fixed_by_the_seed_and_skill_zero_asks_nothing(seed):
    task = TASKS[seed % len(TASKS)]
    assert ScriptedExpert(0.5).plan(view(task, seed=seed)) == ScriptedExpert(0.5).plan(view(task, seed=seed))
    assert ScriptedExpert(0.0).plan(view(task, seed=seed)) == []
    assert all(1 <= len(turn) <= 2 for turn in ScriptedExpert(0.7).plan(view(task, seed=seed)))


def test_answer_uses_only_values_the_human_stated():
    task = TASKS[0]
    told = task["facts"][0]
    answer = render_answer(view(task, [Message(HUMAN, told["fact"])]))
    everything = render_answer(view(task, [Message(HUMAN, " ".join(f["fact"] for f in task["facts"]))]))
    assert everything == task["ground_truth"]
    assert answer != task["ground_truth"]  # the other facts fell back to guesses


def test_no_ask_answers_on_the_first_turn_with_guesses():
    (turn,) = NoAsk().act([view(TASKS[3])])
    assert turn.message.startswith(ANSWER_MARKER)
    assert "```python" in turn.message and final_answer(turn.message)


def test_policy_view_never_contains_hidden_facts():
    task = TASKS[1]
    text = str(policy_chat(view(task, [Message(HUMAN, "I don't know.")])))
    assert all(f["fact"] not in text for f in task["facts"])
    assert task["ground_truth"] not in text
