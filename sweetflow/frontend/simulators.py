"""Simulated humans for frontend design: they see the agent's page and the page they want.

In a ColBench design episode the agent may show one page per turn, written between `<html>` and
`</html>`; the human answers with how it differs from the target page, in at most 1,000
characters. With no page in the agent's message the human says so and reveals nothing.

- `ScriptedDesignHuman`: offline and deterministic. Reads both pages' HTML and names the
  `max_differences` most outstanding differences (`sweetflow.frontend.compare`), whole sentences
  only, as many as fit in `max_reply_chars`.
- `OpenAIDesignHuman`: a vision-language model behind an OpenAI-compatible endpoint, shown both
  pages as screenshots (PNG data URLs) and asked, at temperature 0, for the most important
  differences; it needs the renderer (`render(html) -> PNG bytes | None`) injected.

Which page a message shows: its LAST `<html` tag, up to the next `</html>` or the message's end
(a page cut off by a token limit is still shown, as a browser would show it). ColBench allows one
page per turn; an agent that quotes its old page before the new one is judged on the new one.
"""

from __future__ import annotations

import base64
import hashlib
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from sweetflow.dialogue import AGENT, Message
from sweetflow.frontend.compare import compare

NO_PAGE = "I can't see a page yet — show me one, with the whole page between <html> and </html>."
NOT_RENDERED = "Your page didn't show up for me; it may be broken. Please send the whole page again."
LOOKS_RIGHT = "That looks just like the page I want."
HTML_START = re.compile(r"<html\b", re.IGNORECASE)
HTML_END = re.compile(r"</html\s*>", re.IGNORECASE)


def page_snippet(message: str) -> str | None:
    """The page a message shows (see the module docstring), or None if it shows none."""
    starts = list(HTML_START.finditer(message))
    if not starts:
        return None
    start = starts[-1].start()
    end = HTML_END.search(message, start)
    return message[start : end.end() if end else len(message)]


def last_agent_message(messages: list[Message]) -> str:
    return next((m.content for m in reversed(messages) if m.role == AGENT), "")


def differences_reply(sentences: list[str], max_differences: int, max_reply_chars: int) -> str:
    """Up to `max_differences` sentences, whole, as many as fit in `max_reply_chars`; the first is
    cut only if it alone is longer than that."""
    if not sentences:
        return LOOKS_RIGHT[:max_reply_chars]
    reply = sentences[0][:max_reply_chars]
    for sentence in sentences[1:max_differences]:
        if len(reply) + 1 + len(sentence) > max_reply_chars:
            break
        reply += " " + sentence
    return reply


@dataclass
class ScriptedDesignHuman:
    max_differences: int = 8
    max_reply_chars: int = 1000

    def reply(self, task: dict, messages: list[Message]) -> str:
        page = page_snippet(last_agent_message(messages))
        if page is None:
            return NO_PAGE[: self.max_reply_chars]
        found = compare(page, task["ground_truth"])
        return differences_reply([d.sentence for d in found], self.max_differences, self.max_reply_chars)


DESIGN_HUMAN_SYSTEM_PROMPT = """\
You are a person who asked a web designer to build a web page for you. You know exactly how it \
should look. You will see two screenshots: first the designer's current version, then the page \
you have in mind. Tell the designer the most important ways their version differs from yours, \
most noticeable first: missing, extra or misplaced sections, then layout, then colours, then \
wording. Be concrete: say which part of the page, which colour, which words. Speak as the client, \
about what you see, never about code. Keep it short: a few sentences, at most {limit} characters. \
If the two pages look the same, say so.

What you originally asked for: {problem}"""


def design_human_chat(task: dict, agent_message: str, agent_png: bytes, target_png: bytes, limit: int) -> list[dict]:
    """The request: the instructions, then both screenshots and the designer's words (without the
    page's code), as OpenAI content parts. The designer speaks as "user"."""
    page = page_snippet(agent_message) or ""
    words = " ".join(agent_message.replace(page, " ").split())
    content = [
        {"type": "text", "text": "The designer's current version:"},
        {"type": "image_url", "image_url": {"url": png_data_url(agent_png)}},
        {"type": "text", "text": "The page you want:"},
        {"type": "image_url", "image_url": {"url": png_data_url(target_png)}},
        {
            "type": "text",
            "text": (f"The designer wrote: {words}\n\n" if words else "") + "How does their version differ from yours?",
        },
    ]
    system = DESIGN_HUMAN_SYSTEM_PROMPT.format(limit=limit, problem=task["problem_description"])
    return [{"role": "system", "content": system}, {"role": "user", "content": content}]


def png_data_url(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


@dataclass
class OpenAIDesignHuman:
    client: object  # sweetflow.endpoint.ChatClient
    render: Callable[[str], bytes | None]  # HTML -> PNG screenshot, None when the page can't be shown
    max_reply_chars: int = 1000
    max_new_tokens: int = 256
    _targets: dict[str, bytes] = field(default_factory=dict, repr=False)  # target screenshots by HTML digest
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def reply(self, task: dict, messages: list[Message]) -> str:
        message = last_agent_message(messages)
        page = page_snippet(message)
        if page is None:
            return NO_PAGE[: self.max_reply_chars]
        shot = self.render(page)
        if shot is None:
            return NOT_RENDERED[: self.max_reply_chars]
        chat = design_human_chat(task, message, shot, self._target_png(task), self.max_reply_chars)
        completion = self.client.complete(chat, temperature=0.0, max_tokens=self.max_new_tokens)
        return completion.text.strip()[: self.max_reply_chars]

    def _target_png(self, task: dict) -> bytes:
        """The target's screenshot, rendered once per target for all the turns that need it."""
        key = hashlib.sha1(task["ground_truth"].encode()).hexdigest()
        with self._lock:
            cached = self._targets.get(key)
        if cached is not None:
            return cached
        shot = self.render(task["ground_truth"])
        if shot is None:  # the episode fails with this reason: without the target there is nothing to compare
            raise RuntimeError(f"the target page of task {task.get('task_id', '?')} could not be rendered")
        with self._lock:
            self._targets[key] = shot
        return shot


def make_design_human(params, render: Callable[[str], bytes | None] | None = None):
    """The design simulator that `params` (a DesignSimulatorParams) names; 'openai' needs `render`."""
    if params.backend == "scripted":
        return ScriptedDesignHuman(params.max_differences, params.max_reply_chars)
    if render is None:
        raise ValueError("the 'openai' design simulator needs a renderer (render(html) -> PNG bytes or None)")
    from sweetflow.endpoint import ChatClient

    return OpenAIDesignHuman(ChatClient(params.endpoint), render, params.max_reply_chars, params.max_new_tokens)
