"""The collaboration protocol shared by agents, simulators and the rollout engine.

An episode alternates agent and human messages, at most `max_turns` agent turns. It ends when the
agent's message contains `ANSWER_MARKER` — the final answer is what follows it — or at the last
turn, whose whole message is then the answer. An `Agent` gets the views of all live episodes at
once and returns one turn for each (or the exception that prevented it), so that a model backend
can batch its calls; the rollout engine knows nothing else about agents. What each party is shown
of a dialogue is in `sweetflow.views`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

ANSWER_MARKER = "I WANT TO ANSWER:"
AGENT, HUMAN = "agent", "human"


@dataclass
class Message:
    role: str  # AGENT or HUMAN
    content: str


@dataclass
class AgentTurn:
    """One agent step as a trainer needs it: exactly what the model saw and said."""

    prompt: str  # the formatted model input (chat template text, or the JSON of chat messages)
    raw: str  # the model's raw output
    message: str  # the message as it enters the dialogue
    logprob_sum: float | None = None
    logprob_mean: float | None = None
    n_tokens: int | None = None


@dataclass
class EpisodeView:
    """What an agent may see: the public task and the dialogue so far, never the hidden facts."""

    task_id: str
    problem_description: str
    messages: list[Message]
    seed: int  # per-episode seed: the same (task, sample) gives the same sampled behaviour
    # Scripted agents only: the names of the facts a competent asker would ask about (topics) and
    # how to write the answer once they are known. Language-model agents never read these.
    topics: list[dict] = field(default_factory=list)
    template: str = ""
    # Scripted design agents only: the target page's HTML. Like `topics`, it stands for what the
    # human tells them: they act only on the differences the human's replies name.
    target: str = ""
    domain: str = "backend"  # "backend" (the answer is a Python function) or "frontend" (a web page)
    # The episode's turn limit (`episodes.max_turns`): the policy's instructions state it, and the
    # scripted design agent answers at its last turn. Always given: no default can stand for the run's.
    max_turns: int = field(kw_only=True)

    @property
    def turn(self) -> int:
        return sum(m.role == AGENT for m in self.messages)


class ContextOverflow(ValueError):
    """The agent cannot take another turn: the dialogue fills its model's context. The episode ends
    there, as at the last turn: its last message is the answer (the agent's shortfall, not a fault)."""


def final_answer(message: str) -> str | None:
    """The answer in an agent message, or None if the message doesn't give one."""
    at = message.find(ANSWER_MARKER)
    return message[at + len(ANSWER_MARKER) :].strip() if at >= 0 else None


class Agent(Protocol):
    def act(self, views: list[EpisodeView]) -> list[AgentTurn | Exception]: ...
