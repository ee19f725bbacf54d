"""Simulated humans for backend tasks: they know the hidden facts and answer the agent's questions.

- `ScriptedHuman`: offline and deterministic. Splits the agent's message into questions, matches each
  against the topics of the task's hidden facts by content words (light stemming and a small synonym
  table), and answers with the matching facts' statements, at most `max_facts` per reply. A question
  that names no topic precisely ("anything else?") gets "I don't know"; nothing is volunteered.
- `OpenAIHuman`: any OpenAI-compatible endpoint plays the human with the paper's protocol: it sees
  the problem, the hidden information and the dialogue and answers in at most two sentences.

Both cut replies at `max_reply_chars` (ColBench: 400).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

from sweetflow.dialogue import AGENT, Message

DONT_KNOW = "I don't know."

STOPWORDS = frozenset(
    """a an the of for to in on at by with and or is are be do does should would could can i you we my
    your our what which how much many when where who whom it its this that these those there any anything
    else me us please tell know want use used using need give about if as from per so just also like
    kind sort some more most other than then will may might question questions quick wondering two""".split()
)
# Words a person uses interchangeably when asking about a fact, reduced to one spelling.
SYNONYMS = {
    "cost": "price", "charge": "price", "fee": "price", "pay": "price",
    "percent": "percentage", "pct": "percentage", "%": "percentage",
    "cutoff": "threshold", "limit": "threshold", "cap": "threshold",
    "max": "maximum", "min": "minimum", "least": "minimum",
    "reduction": "discount",
}


def _stem(word: str) -> str:
    for suffix in ("ies", "es", "s"):
        if word.endswith(suffix) and len(word) > len(suffix) + 2:
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def content_words(text: str) -> set[str]:
    words = set()
    for token in re.findall(r"[A-Za-z0-9%]+", text):
        if len(token) == 1 and token.isupper():
            words.add(token)  # a name such as the grade "A", not the article
            continue
        word = _stem(token.lower())
        if word not in STOPWORDS:
            words.add(SYNONYMS.get(word, word))
    return words


def questions_in(message: str) -> list[str]:
    """The questions in a message: its sentences ending in '?', or the whole message if none do."""
    parts = [q.strip() for q in re.findall(r"[^.?!\n]*\?", message)]
    return [q for q in parts if q] or [message]


class Human(Protocol):
    def reply(self, task: dict, messages: list[Message]) -> str: ...


@dataclass
class ScriptedHuman:
    max_facts: int = 2
    max_reply_chars: int = 400
    match_threshold: float = 1.0

    def matching_facts(self, task: dict, message: str) -> list[dict]:
        """Facts whose topic a question in `message` names, in the order asked, without repeats.

        One question may name several topics ("what is the X, and what is the Y?"). A topic whose
        words are all part of another named topic gives way to it: asking for the "price per extra
        kilo" is not asking for the "price".
        """
        found: list[dict] = []
        for question in questions_in(message):
            asked = content_words(question)
            named = [(f, words) for f in task["facts"] if (words := content_words(f["topic"]))]
            named = [(f, w) for f, w in named if len(w & asked) / len(w) >= self.match_threshold]
            for fact, words in named:
                more_specific = any(words < other for _, other in named)
                if not more_specific and fact not in found:
                    found.append(fact)
        return found[: self.max_facts]

    def reply(self, task: dict, messages: list[Message]) -> str:
        last = next(m.content for m in reversed(messages) if m.role == AGENT)
        facts = self.matching_facts(task, last)
        text = " ".join(f["fact"] for f in facts) if facts else DONT_KNOW
        return text[: self.max_reply_chars]


HUMAN_SYSTEM_PROMPT = """\
You are playing a person who asked an AI assistant to write a Python function for them. You know \
exactly what you want; it is written in the hidden information below, which the assistant cannot \
see. Reply to the assistant's latest message as that person would, in at most two short sentences.

Rules:
- Answer only what the assistant asked, using the hidden information. Do not volunteer other details.
- If the hidden information does not say, answer that you don't know.
- Never show or quote code, and never write the function yourself.

The task you asked for:
{problem}

Hidden information (only you know it):
{hidden}
"""


def hidden_information(task: dict) -> str:
    """What the simulated human knows: the facts if the task has them, else the reference code."""
    if len(task.get("facts") or []):
        return "\n".join(f"- {f['fact']}" for f in task["facts"])
    return task["ground_truth"]


def human_chat(task: dict, messages: list[Message]) -> list[dict]:
    """The dialogue from the human's side: the agent speaks as "user", the human as "assistant"."""
    system = HUMAN_SYSTEM_PROMPT.format(problem=task["problem_description"], hidden=hidden_information(task))
    chat = [{"role": "system", "content": system}]
    chat += [{"role": "user" if m.role == AGENT else "assistant", "content": m.content} for m in messages]
    return chat


@dataclass
class OpenAIHuman:
    client: object  # sweetflow.openai_backend.ChatClient
    max_reply_chars: int = 400
    max_new_tokens: int = 128

    def reply(self, task: dict, messages: list[Message]) -> str:
        completion = self.client.complete(human_chat(task, messages), temperature=0.0, max_tokens=self.max_new_tokens)
        return completion.text.strip()[: self.max_reply_chars]


def make_human(params) -> Human:
    """The simulator that `params` (a SimulatorParams) names."""
    if params.backend == "scripted":
        return ScriptedHuman(params.max_facts, params.max_reply_chars, params.match_threshold)
    from sweetflow.openai_backend import ChatClient

    return OpenAIHuman(ChatClient(params.endpoint), params.max_reply_chars, params.max_new_tokens)
