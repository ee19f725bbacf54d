"""Agents (policies): one small interface, several backends.

An agent gets the views of all live episodes at once and returns one turn for each (or the
exception that prevented it), so a model backend can batch its calls. The rollout engine knows
nothing else about agents; a new backend only implements `act`.

- `ScriptedExpert`: asks about each hidden fact with probability `skill`, one or two per turn, then
  answers with the reference rendered from what it was told (and its guesses for the rest). Values
  come only from the human's replies: a fact counts as known when its statement was said.
- `NoAsk`: answers at once with its guesses (the lower bound).
- `OpenAIAgent`: a policy behind an OpenAI-compatible endpoint.
"""

from __future__ import annotations

import json
import random
import string
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from sweetflow.dialogue import AGENT, ANSWER_MARKER, HUMAN, AgentTurn, EpisodeView
from sweetflow.errors import InputError
from sweetflow.openai_backend import ChatClient, EndpointError
from sweetflow.params import AgentParams

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


class Agent(Protocol):
    def act(self, views: list[EpisodeView]) -> list[AgentTurn | Exception]: ...


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
            if view.turn < len(plan):
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


BACKEND_SYSTEM_PROMPT = f"""\
You are a programming assistant working with a person who wants a Python function. Their request \
leaves out details that only they know, and your function will be checked against exactly what \
they have in mind. Ask them short, specific questions, one or two per message. When you know \
enough, write {ANSWER_MARKER} followed by the complete function in a ```python block. You have at \
most ten messages; the last one counts as your answer."""

FRONTEND_SYSTEM_PROMPT = f"""\
You are a web designer working with a person who wants a web page. Their description leaves out \
most details (colours, texts, layout), and your final page will be compared with exactly the page \
they have in mind. In each message you may show one complete page in HTML between <html> and \
</html>, styled with Tailwind CSS 2.2.19 (<link \
href="https://cdn.jsdelivr.net/npm/tailwindcss@2.2.19/dist/tailwind.min.css" rel="stylesheet">) \
and with pictures from https://picsum.photos/id/48/WIDTH/HEIGHT; the person will look at it and \
tell you how it differs from what they want. When the page is right, write {ANSWER_MARKER} \
followed by the final page. You have at most ten messages; the last one counts as your answer."""

# The policy's instructions, by the domain of the task (EpisodeView.domain).
POLICY_SYSTEM_PROMPTS = {"backend": BACKEND_SYSTEM_PROMPT, "frontend": FRONTEND_SYSTEM_PROMPT}


def policy_chat(view: EpisodeView) -> list[dict]:
    """The dialogue from the agent's side, as chat messages (the policy's own view: no hidden
    information), with the instructions of the task's domain."""
    chat = [
        {"role": "system", "content": POLICY_SYSTEM_PROMPTS[view.domain]},
        {"role": "user", "content": view.problem_description},
    ]
    chat += [{"role": "assistant" if m.role == AGENT else "user", "content": m.content} for m in view.messages]
    return chat


class OpenAIAgent:
    def __init__(self, params: AgentParams):
        self.params = params
        self.client = ChatClient(params.endpoint)

    def _one(self, view: EpisodeView) -> AgentTurn | Exception:
        chat = policy_chat(view)
        try:
            completion = self.client.complete(
                chat,
                temperature=self.params.temperature,
                top_p=self.params.top_p,
                max_tokens=self.params.max_new_tokens,
                logprobs=True,
                seed=view.seed * 100 + view.turn,
            )
        except EndpointError as e:  # the engine records the episode as failed, with this reason
            return e
        return AgentTurn(
            prompt=json.dumps(chat),
            raw=completion.text,
            message=completion.text.strip(),
            logprob_sum=completion.logprob_sum,
            logprob_mean=completion.logprob_mean,
            n_tokens=completion.n_tokens,
        )

    def act(self, views: list[EpisodeView]) -> list[AgentTurn | Exception]:
        with ThreadPoolExecutor(self.params.endpoint.concurrency) as pool:
            return list(pool.map(self._one, views))


def make_agent(params: AgentParams) -> Agent:
    if params.backend == "scripted":
        return ScriptedExpert(params.skill)
    if params.backend == "no_ask":
        return NoAsk()
    if params.backend == "transformers":
        if not params.checkpoint:
            raise InputError("an agent with backend 'transformers' needs `checkpoint` (a checkpoint directory)")
        from sweetflow.models.policy import TransformersAgent  # torch is imported only when needed

        return TransformersAgent(params)
    return OpenAIAgent(params)
