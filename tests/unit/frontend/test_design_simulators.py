"""Design simulators: which page they judge, what they say, what they never say, how long.

The `openai` one is checked twice: its request, captured by a stand-in client, and end to end
against a real OpenAI-compatible server (`transformers serve` of a tiny vision-language model
built here) with screenshots from a stand-in renderer.
"""

from __future__ import annotations

import base64
import io
import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai import OpenAI
from PIL import Image

from sweetflow.dialogue import AGENT, HUMAN, Message
from sweetflow.endpoint import ChatClient, Completion
from sweetflow.frontend.compare import compare
from sweetflow.frontend.page import to_html
from sweetflow.frontend.pages import generate_page
from sweetflow.frontend.simulators import (
    LOOKS_RIGHT,
    NO_PAGE,
    NOT_RENDERED,
    OpenAIDesignHuman,
    ScriptedDesignHuman,
    make_design_human,
    page_snippet,
)
from sweetflow.frontend.tasks import generate_frontend_tasks
from tests.support.llm_server import serve_checkpoint
from tests.support.params import endpoint_params, project_params
from tests.support.project import SAMPLE

_, TASKS = generate_frontend_tasks(0, 12, seed=2)
PLAIN = "<html><body><h1>Hello</h1></body></html>"


def said(text: str) -> list[Message]:
    return [Message(AGENT, text)]


def test_the_last_page_of_a_message_is_judged():
    two = "Old:\n<html><body>old</body></html>\nNew:\n<HTML><body>new</body></HTML> thanks"
    assert page_snippet(two) == "<HTML><body>new</body></HTML>"
    assert page_snippet("Here: <html><body><p>cut off") == "<html><body><p>cut off"
    assert page_snippet("What colour should the header be?") is None


@pytest.mark.parametrize("message", ["What colour should the header be?", "Show me the page you want.", ""])
def test_without_a_page_nothing_is_revealed(message):
    sample_rows = SAMPLE / "frontend_test_first30.jsonl"
    rows = [json.loads(line) for line in sample_rows.read_text().splitlines()]
    for task in TASKS + rows:
        assert ScriptedDesignHuman().reply(task, said(message)) == NO_PAGE


def test_reply_names_the_most_outstanding_differences_first():
    task = TASKS[0]
    found = [d.sentence for d in compare(PLAIN, task["ground_truth"])]
    assert ScriptedDesignHuman(max_differences=2).reply(task, said(PLAIN)) == " ".join(found[:2])
    assert ScriptedDesignHuman().reply(task, said(f"Is this it?\n{task['ground_truth']}")) == LOOKS_RIGHT


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=1, max_value=1200), st.integers(min_value=1, max_value=12), st.integers(0, 11))
def test_replies_are_cut_at_the_limit_in_whole_sentences(limit, most, which):
    task = TASKS[which]
    reply = ScriptedDesignHuman(most, limit).reply(task, said(PLAIN))
    found = [d.sentence for d in compare(PLAIN, task["ground_truth"])]
    assert 0 < len(reply) <= limit
    if len(found[0]) <= limit:  # only a first sentence longer than the limit is itself cut
        kept = [s for s in found[:most] if s in reply]
        assert reply == " ".join(kept) and kept == found[: len(kept)]


# --- the openai simulator ------------------------------------------------------------------------


def png(colour: str) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (64, 40), colour).save(buffer, "PNG")
    return buffer.getvalue()


class StandInRenderer:
    """Target pages render blue, others red; counts its calls."""

    def __init__(self, fail_on: str | None = None):
        self.calls: list[str] = []
        self.fail_on = fail_on

    def __call__(self, html: str) -> bytes | None:
        self.calls.append(html)
        if self.fail_on and self.fail_on in html:
            return None
        return png("blue" if html in {t["ground_truth"] for t in TASKS} else "red")


class CapturingClient:
    def __init__(self, text: str = "The header should be green."):
        self.requests: list[dict] = []
        self.text = text

    def complete(self, messages, temperature, max_tokens=None, **_):
        self.requests.append({"messages": messages, "temperature": temperature, "max_tokens": max_tokens})
        return Completion(self.text)


def image_parts(request: dict) -> list[bytes]:
    parts = [p for m in request["messages"] if isinstance(m["content"], list) for p in m["content"]]
    urls = [p["image_url"]["url"] for p in parts if p["type"] == "image_url"]
    assert all(u.startswith("data:image/png;base64,") for u in urls)
    return [base64.b64decode(u.split(",", 1)[1]) for u in urls]


def test_openai_request_shows_both_screenshots_at_temperature_zero():
    task, client, renderer = TASKS[0], CapturingClient("x" * 5000), StandInRenderer()
    human = OpenAIDesignHuman(client, renderer)
    for turn in range(2):
        reply = human.reply(task, [*said("Hi"), Message(HUMAN, "?"), Message(AGENT, f"Version {turn}:\n{PLAIN}")])
        assert reply == "x" * 1000  # cut at ColBench's limit
    request = client.requests[-1]
    assert request["temperature"] == 0.0
    assert image_parts(request) == [png("red"), png("blue")]  # the agent's page, then the target
    system, user = request["messages"]
    assert system["role"] == "system" and task["problem_description"] in system["content"]
    words = [p["text"] for p in user["content"] if p["type"] == "text"]
    assert any("Version 1:" in w for w in words) and not any("<html>" in w for w in words)
    assert renderer.calls.count(task["ground_truth"]) == 1  # the target is shot once for all turns


def test_openai_human_without_a_page_or_with_a_broken_one_asks_no_model():
    client = CapturingClient()
    human = OpenAIDesignHuman(client, StandInRenderer(fail_on="broken"))
    assert human.reply(TASKS[0], said("What colours do you like?")) == NO_PAGE
    assert human.reply(TASKS[0], said("<html><body>broken</body></html>")) == NOT_RENDERED
    assert client.requests == []
    with pytest.raises(RuntimeError, match="could not be rendered"):
        OpenAIDesignHuman(client, StandInRenderer(fail_on="tailwindcss")).reply(TASKS[0], said(PLAIN))


def test_make_design_human_by_params():
    scripted = project_params().frontend.simulator
    assert isinstance(make_design_human(scripted), ScriptedDesignHuman)
    served = scripted.model_copy(
        update={"backend": "openai", "endpoint": endpoint_params(base_url="http://127.0.0.1:9/v1")}
    )
    with pytest.raises(ValueError, match="renderer"):
        make_design_human(served)
    assert isinstance(make_design_human(served, StandInRenderer()), OpenAIDesignHuman)


@pytest.fixture(scope="module")
def vlm_server(tmp_path_factory):
    from tests.support.tiny_vlm import build_tiny_vlm  # torch and transformers only for this test

    with serve_checkpoint(build_tiny_vlm(tmp_path_factory.mktemp("vlm") / "checkpoint")) as served:
        yield served


def test_served_vision_language_model_sees_the_screenshots(vlm_server):
    base_url, model = vlm_server
    endpoint = endpoint_params(base_url=base_url, model=model, api_key_env="SWEETFLOW_TEST_KEY", timeout_s=60)
    human = OpenAIDesignHuman(ChatClient(endpoint), StandInRenderer(), max_reply_chars=1000, max_new_tokens=16)
    task = TASKS[1]
    reply = human.reply(task, said(f"Here it is:\n{to_html(generate_page(random.Random(0)).page)}"))
    assert isinstance(reply, str) and len(reply) <= 1000
    # The images reach the model: at temperature 0 the same words with other pictures answer otherwise.
    client = OpenAI(base_url=base_url, api_key="unused")

    def answer(agent_colour: str, target_colour: str) -> str:
        content = [{"type": "text", "text": "Mine, then yours:"}]
        content += [
            {"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(png(c)).decode()}}
            for c in (agent_colour, target_colour)
        ]
        completion = client.chat.completions.create(
            model=model, temperature=0, max_tokens=12, messages=[{"role": "user", "content": content}]
        )
        return completion.choices[0].message.content

    answers = {answer(a, t) for a, t in (("red", "blue"), ("white", "black"), ("green", "yellow"))}
    assert len(answers) > 1
