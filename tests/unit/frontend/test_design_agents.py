"""Scripted design agents against the scripted design simulator: the expert iterates to the
target, skill makes it slower, no_ask builds its page from the description alone."""

from __future__ import annotations

import json
import statistics

from sweetflow.dialogue import AGENT, ANSWER_MARKER, HUMAN, EpisodeView, Message, final_answer
from sweetflow.frontend.agents import DesignExpert, DesignNoAsk
from sweetflow.frontend.compare import compare
from sweetflow.frontend.outline import read_page
from sweetflow.frontend.page import page_from_json
from sweetflow.frontend.plain import page_from_description
from sweetflow.frontend.simulators import ScriptedDesignHuman, page_snippet
from sweetflow.frontend.tasks import generate_frontend_tasks
from tests.support.project import SAMPLE

MAX_TURNS = 10
_, TASKS = generate_frontend_tasks(0, 40, seed=3)
FRONTEND_SAMPLE = SAMPLE / "frontend_test_first30.jsonl"


def view(task: dict, messages: list[Message], seed: int = 0) -> EpisodeView:
    return EpisodeView(
        task["task_id"],
        task["problem_description"],
        list(messages),
        seed,
        target=task["ground_truth"],
        domain="frontend",
        max_turns=MAX_TURNS,
    )


def play(agent, task: dict, human=None, seed: int = 0) -> tuple[str, int, list[Message]]:
    """One episode by ColBench's rules: (the answer's page, agent turns, dialogue)."""
    human = human or ScriptedDesignHuman()
    messages: list[Message] = []
    for turn in range(MAX_TURNS):
        (agent_turn,) = agent.act([view(task, messages, seed)])
        messages.append(Message(AGENT, agent_turn.message))
        answer = final_answer(agent_turn.message)
        if answer is not None or turn == MAX_TURNS - 1:
            return page_snippet(agent_turn.message) or "", turn + 1, messages
        messages.append(Message(HUMAN, human.reply(task, messages)))
    raise AssertionError("unreachable")


def test_expert_at_full_skill_reaches_the_target_within_ten_turns():
    for task in TASKS:
        page, turns, _ = play(DesignExpert(1.0), task)
        assert compare(page, task["ground_truth"]) == [] and turns <= MAX_TURNS
        assert page.rstrip() == task["ground_truth"].rstrip()  # the very same page


def test_expert_beats_no_ask_on_every_task():
    expert = [len(compare(play(DesignExpert(1.0), t)[0], t["ground_truth"])) for t in TASKS]
    no_ask = [len(compare(play(DesignNoAsk(), t)[0], t["ground_truth"])) for t in TASKS]
    assert all(e < n for e, n in zip(expert, no_ask))
    assert statistics.mean(no_ask) > 20


def test_lower_skill_is_slower_and_skill_zero_changes_nothing():
    half = [len(compare(play(DesignExpert(0.5), t)[0], t["ground_truth"])) for t in TASKS[:10]]
    assert statistics.mean(half) > 0
    task = TASKS[0]
    page, turns, _ = play(DesignExpert(0.0), task)
    assert turns == MAX_TURNS and read_page(page) == page_from_description(task["problem_description"])
    assert play(DesignExpert(0.5), task, seed=7) == play(DesignExpert(0.5), task, seed=7)


def test_expert_shows_a_page_each_turn_and_answers_when_told_nothing_usable():
    task = TASKS[1]
    (first,) = DesignExpert(1.0).act([view(task, [])])
    assert page_snippet(first.message) and final_answer(first.message) is None
    told_nothing = [Message(AGENT, first.message), Message(HUMAN, "Hmm, I am not sure.")]
    (second,) = DesignExpert(1.0).act([view(task, told_nothing)])
    assert second.message.startswith(ANSWER_MARKER) and page_snippet(second.message) == page_snippet(first.message)


def test_no_ask_answers_at_once_with_the_sections_the_description_names():
    for task in TASKS:
        (turn,) = DesignNoAsk().act([view(task, [])])
        assert turn.message.startswith(ANSWER_MARKER)
        target = page_from_json(task["spec"])
        assert [b.kind for b in read_page(page_snippet(turn.message)).blocks] == [b.kind for b in target.blocks]


def test_prompts_are_the_designers_view_without_the_target():
    task = TASKS[2]
    _, _, messages = play(DesignExpert(1.0), task)
    for k in range(0, len(messages), 2):
        (turn,) = DesignExpert(1.0).act([view(task, messages[:k])])
        system, request, *dialogue = json.loads(turn.prompt)
        assert system["role"] == "system" and "Tailwind CSS 2.2.19" in system["content"]
        assert request == {"role": "user", "content": task["problem_description"]}
        assert [m["content"] for m in dialogue] == [m.content for m in messages[:k]]
    (first,) = DesignExpert(1.0).act([view(task, [])])
    assert task["ground_truth"] not in first.prompt


def test_expert_also_reaches_real_targets_as_compare_reads_them():
    rows = [json.loads(line) for line in FRONTEND_SAMPLE.read_text(encoding="utf-8").splitlines()]
    for k, row in enumerate(rows):
        page, turns, _ = play(DesignExpert(1.0), {"task_id": f"real-{k}", **row})
        assert compare(page, row["ground_truth"]) == [] and turns <= MAX_TURNS


def test_backend_views_are_unchanged():
    backend_view = EpisodeView("t", "Write a function.", [], 0, [{"topic": "x"}], "tmpl", max_turns=10)
    assert backend_view.target == "" and backend_view.template == "tmpl" and backend_view.turn == 0
