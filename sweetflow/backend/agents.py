"""Scripted agents of backend tasks (the `Agent` interface of `sweetflow.dialogue`).

- `ScriptedExpert`: asks about each hidden fact with probability `skill`, one or two per turn, then
  answers with the reference rendered from what it was told (and its guesses for the rest); at its
  last turn (`EpisodeView.max_turns`, the run's `episodes.max_turns`) it answers whatever is left
  unasked. Values come only from the human's replies: a fact counts as known when its statement was said.
- `NoAsk`: answers at once with its guesses (the lower bound).
"""

from __future__ import annotations

import json
import random
import string

from sweetflow.dialogue import ANSWER_MARKER, HUMAN, AgentTurn, EpisodeView
from sweetflow.views import policy_chat

ONE_QUESTION = (
    "What is the {0}?",
    "Could you tell me the {0}?",
    "What should I use for the {0}?",
    "Before I write it: what is the {0}?",
)


TWO_QUESTIONS = (
    "What is the {0}? And what is the {1}?",
    "Could you tell me the {0}? Also, what is the {1}?",
    "Two questions: what is the {0}, and what is the {1}?",
)


def answer_message(code: str) -> str:
    return f"{ANSWER_MARKER}\n```python\n{code.rstrip()}\n```"


def render_answer(view: EpisodeView) -> str:
    """The task's template filled with the values the human stated, and guesses for the others."""
    said = " ".join(m.content for m in view.messages if m.role == HUMAN)
    values = {f["parameter"]: (f["value"] if f["fact"] in said else f["guess"]) for f in view.topics}
    return string.Template(view.template).substitute(values)


class ScriptedExpert:
    def __init__(self, skill: float):
        self.skill = skill

    def plan(self, view: EpisodeView) -> list[list[str]]:
        """The questions of each turn, fixed per episode by its seed: facts skipped with
        probability 1 - skill, the rest asked in order, one or two per turn."""
        rng = random.Random(f"{view.seed}:{view.task_id}")
        topics = [f["topic"] for f in view.topics if rng.random() < self.skill]
        turns = []
        while topics:
            n = 2 if len(topics) > 1 and rng.random() < 0.5 else 1
            turns.append(topics[:n])
            topics = topics[n:]
        return turns

    def act(self, views: list[EpisodeView]) -> list[AgentTurn | Exception]:
        turns = []
        for view in views:
            plan = self.plan(view)
            if view.turn < min(len(plan), view.max_turns - 1):
                rng = random.Random(f"{view.seed}:{view.task_id}:{view.turn}")
                asked = plan[view.turn]
                message = rng.choice(ONE_QUESTION if len(asked) == 1 else TWO_QUESTIONS).format(*asked)
            else:
                message = answer_message(render_answer(view))
            turns.append(AgentTurn(prompt=_scripted_prompt(view), raw=message, message=message))
        return turns


class NoAsk:
    def act(self, views: list[EpisodeView]) -> list[AgentTurn | Exception]:
        out = []
        for view in views:
            message = answer_message(render_answer(view))
            out.append(AgentTurn(prompt=_scripted_prompt(view), raw=message, message=message))
        return out


def _scripted_prompt(view: EpisodeView) -> str:
    return json.dumps(policy_chat(view))
