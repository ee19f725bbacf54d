"""Simulated humans for backend tasks: they know the hidden facts and answer the agent's questions.

- `ScriptedHuman`: offline and deterministic. Splits the agent's message into questions (and those
  into clauses), matches each against the topics of the task's hidden facts by content words (light
  stemming of plurals and verb endings, a small synonym table), and answers with the matching facts'
  statements, at most `max_facts` per reply. A question that names no topic precisely ("anything
  else?") gets "I don't know"; nothing is volunteered. Lexical rather than embedding matching, by
  measurement (bench/simulator_matching.py): it never misses the phrasing it is asked in (100% of
  the expert's questions, 96% of close rewordings) and gives a fact to 2% of vague questions, where
  all-MiniLM-L6-v2 gave one to 5-27% — a simulator that answers vague questions rewards them. Its
  price is paraphrase: an agent must name what it asks about (1-3% recall on loose paraphrases).
- `OpenAIHuman`: any OpenAI-compatible endpoint plays the human with the paper's protocol: it sees
  the problem, the hidden information and the dialogue and answers in at most two sentences.

Both cut replies at `max_reply_chars` (ColBench: 400).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

from sweetflow.dialogue import AGENT, HUMAN, Message

DONT_KNOW = "I don't know."

STOPWORDS = frozenset(
    """a an the of for to in on at by with and or is are be do does should would could can i you we my
    your our what which how much many when where who whom it its this that these those there any anything
    else me us please tell know want use used using need give about if as from per so just also like
    kind sort some more most other than then will may might question questions quick wondering two""".split()
)
# Words a person uses interchangeably when asking about a fact, reduced to one spelling.
SYNONYMS = {
    "cost": "price",
    "charge": "price",
    "fee": "price",
    "pay": "price",
    "percent": "percentage",
    "pct": "percentage",
    "%": "percentage",
    "cutoff": "threshold",
    "limit": "threshold",
    "cap": "threshold",
    "max": "maximum",
    "highest": "maximum",
    "largest": "maximum",
    "biggest": "maximum",
    "min": "minimum",
    "least": "minimum",
    "lowest": "minimum",
    "smallest": "minimum",
    "reduction": "discount",
    # keyed by every inflection: the table is read before the verb endings are cut
    "cover": "include",
    "covered": "include",
    "covering": "include",
}


def stem_plural(word: str) -> str:
    """-ies -> -y; -es only after ss/us/x/zz/ch/sh (classes, taxes); -s not after ss/us/is
    (class, bonus, this): so names/name, prices/price, purchases/purchase agree."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith("es") and word[:-2].endswith(("ss", "us", "x", "zz", "ch", "sh")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def stem_verb(word: str) -> str:
    """-ing/-ed, a doubled final consonant, a final -e: charge/charged/charging, skip/skipped agree."""
    if len(word) > 5 and word.endswith("ing"):
        word = word[:-3]
    elif len(word) > 4 and word.endswith("ed"):
        word = word[:-2]
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "ls":
        word = word[:-1]
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    return word


def content_words(text: str) -> set[str]:
    words = set()
    for token in re.findall(r"[A-Za-z0-9%]+", text):
        if len(token) == 1 and token.isupper():
            words.add(token)  # a name such as the grade "A", not the article
            continue
        lower = token.lower()
        word = stem_plural(lower)
        if lower in STOPWORDS or word in STOPWORDS:
            continue
        word = stem_verb(SYNONYMS.get(word, word))
        if word not in STOPWORDS:  # "needed" -> "need"
            words.add(word)
    return words


def questions_in(message: str) -> list[str]:
    """The questions in a message: its sentences ending in '?', or the whole message if none do."""
    parts = [q.strip() for q in re.findall(r"[^.?!\n]*\?", message)]
    return [q for q in parts if q] or [message]


# Where a new question starts inside a sentence: "Two questions: what is the X, and what is the Y?"
CLAUSE_BREAK = re.compile(
    r"(?:,|;|:)\s*(?:and\s+|also\s+)?(?=(?:what|how|which|when|where|who|is|are|do|does|can|could|should)\b)"
    r"|\s+and\s+(?=(?:what|how|which|when|where|who)\b)",
    re.IGNORECASE,
)


def clauses_in(question: str) -> list[str]:
    return [c for c in CLAUSE_BREAK.split(question) if c.strip()]


class Human(Protocol):
    def reply(self, task: dict, messages: list[Message]) -> str: ...


@dataclass
class ScriptedHuman:
    max_facts: int = 2
    max_reply_chars: int = 400
    match_threshold: float = 1.0

    def named_in(self, task: dict, text: str) -> list[dict]:
        """Facts whose topic words `text` contains (share >= match_threshold). A topic whose words
        are all part of another named topic gives way to it: asking for the "price per extra kilo"
        is not asking for the "price"."""
        asked = content_words(text)
        named = [(f, words) for f in task["facts"] if (words := content_words(f["topic"]))]
        named = [(f, w) for f, w in named if len(w & asked) / len(w) >= self.match_threshold]
        return [f for f, words in named if not any(words < other for _, other in named)]

    def matching_facts(self, task: dict, message: str) -> list[dict]:
        """Facts the questions of `message` name, in the order asked, without repeats. Each clause
        of a question is matched on its own, so that the words of "what is the weekday closing
        time, and what is the weekend opening time?" don't pool into a third topic; a topic whose
        words span clauses is still found on the whole question."""
        found: list[dict] = []
        for question in questions_in(message):
            by_clause = [f for clause in clauses_in(question) for f in self.named_in(task, clause)]
            for fact in by_clause or self.named_in(task, question):
                if fact not in found:
                    found.append(fact)
        return found[: self.max_facts]

    def reply(self, task: dict, messages: list[Message]) -> str:
        last = next(m.content for m in reversed(messages) if m.role == AGENT)
        facts = self.matching_facts(task, last)
        text = " ".join(f["fact"] for f in facts) if facts else DONT_KNOW
        return text[: self.max_reply_chars]


def changed_replies(human: Human, task: dict, dialogue: list[dict]) -> list[tuple[int, str, str]]:
    """(position, recorded, now) of every human turn of a recorded dialogue that `human` would now
    answer differently. An empty list: every agent turn would see the text it saw, so the episode
    replays as it ran."""
    changed = []
    for i, turn in enumerate(dialogue):
        if turn["role"] == HUMAN and i > 0:
            now = human.reply(task, [Message(t["role"], t["content"]) for t in dialogue[:i]])
            if now != turn["content"]:
                changed.append((i, turn["content"], now))
    return changed


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
    client: object  # sweetflow.endpoint.ChatClient
    max_reply_chars: int = 400
    max_new_tokens: int = 128

    def reply(self, task: dict, messages: list[Message]) -> str:
        completion = self.client.complete(human_chat(task, messages), temperature=0.0, max_tokens=self.max_new_tokens)
        return completion.text.strip()[: self.max_reply_chars]


def make_human(params) -> Human:
    """The simulator that `params` (a SimulatorParams) names."""
    if params.backend == "scripted":
        return ScriptedHuman(params.max_facts, params.max_reply_chars, params.match_threshold)
    from sweetflow.endpoint import ChatClient

    return OpenAIHuman(ChatClient(params.endpoint), params.max_reply_chars, params.max_new_tokens)
