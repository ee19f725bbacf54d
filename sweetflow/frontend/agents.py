"""Scripted agents for frontend design tasks (the `Agent` interface of `sweetflow.agents`).

- `DesignNoAsk`: answers at once with the plain page built from the description alone
  (`sweetflow.frontend.plain.page_from_description`).
- `DesignExpert`: starts from that same plain page and shows it; each turn it applies the
  differences the human's last reply names, each with probability `skill`, and shows the result.
  It answers when the reply names no difference it can act on (the page is right, or the human
  said nothing usable) or at its last turn (`EpisodeView.max_turns`, the run's `episodes.max_turns`).
  It knows a named difference by its exact sentence: it compares its own page with the target
  (`EpisodeView.target`) as the scripted simulator does and acts only on the differences whose
  sentences the reply contains, so what it changes is exactly what it was told, as the backend
  expert uses only the facts the human stated.
"""

from __future__ import annotations

import json
import random

from sweetflow.dialogue import AGENT, ANSWER_MARKER, HUMAN, AgentTurn, EpisodeView
from sweetflow.frontend.compare import apply, diff_pages, read_target
from sweetflow.frontend.outline import read_page
from sweetflow.frontend.page import Page, to_html
from sweetflow.frontend.plain import page_from_description
from sweetflow.frontend.simulators import page_snippet
from sweetflow.views import policy_chat

SHOW_PAGE = "Here is my current version of the page. What should I change?\n{page}"


def show_message(page: Page) -> str:
    return SHOW_PAGE.format(page=to_html(page).rstrip())


def answer_message(page: Page) -> str:
    return f"{ANSWER_MARKER}\n{to_html(page).rstrip()}"


def _turn(view: EpisodeView, message: str) -> AgentTurn:
    return AgentTurn(prompt=json.dumps(policy_chat(view)), raw=message, message=message)


class DesignNoAsk:
    def act(self, views: list[EpisodeView]) -> list[AgentTurn | Exception]:
        return [_turn(view, answer_message(page_from_description(view.problem_description))) for view in views]


class DesignExpert:
    def __init__(self, skill: float):
        self.skill = skill

    def next_page(self, view: EpisodeView) -> tuple[Page, bool]:
        """The page to send this turn, and whether it is the answer."""
        shown = next((page_snippet(m.content) for m in reversed(view.messages) if m.role == AGENT), None)
        if shown is None:  # nothing shown yet (or a dialogue begun by someone else): start plain
            return page_from_description(view.problem_description), view.turn >= view.max_turns - 1
        page = read_page(shown)
        reply = next((m.content for m in reversed(view.messages) if m.role == HUMAN), "")
        named = [d for d in diff_pages(page, read_target(view.target)) if d.sentence in reply]
        rng = random.Random(f"{view.seed}:{view.task_id}:{view.turn}")
        page = apply(page, [d for d in named if rng.random() < self.skill])
        return page, not named or view.turn >= view.max_turns - 1

    def act(self, views: list[EpisodeView]) -> list[AgentTurn | Exception]:
        turns = []
        for view in views:
            page, final = self.next_page(view)
            turns.append(_turn(view, answer_message(page) if final else show_message(page)))
        return turns
