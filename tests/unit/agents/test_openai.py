"""The `openai` agent against a real `transformers serve` on loopback: a dialogue that outgrows the served
model's context ends as it does with a local model, and a refusal keeps the server's reason."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from sweetflow.agents.openai import OpenAIAgent
from sweetflow.dialogue import AgentTurn, ContextOverflow, EpisodeView
from sweetflow.endpoint import ChatClient, EndpointError, PromptTooLong
from tests.support.params import endpoint_params, openai_agent


def view(task_id: str, description: str) -> EpisodeView:
    return EpisodeView(task_id, description, [], seed=1, max_turns=10)


def test_a_prompt_past_the_served_context_ends_only_its_episode(openai_server):
    base_url, model = openai_server
    agent = OpenAIAgent(openai_agent(endpoint_params(base_url=base_url, model=model), max_new_tokens=8), record=False)
    # ~6,000 tokens with the tiny checkpoint's vocabulary, past its 4,096-token context.
    long = view("long", "Please " * 3000)
    turns = agent.act([view("a", "Write a function."), long, view("b", "Add two numbers.")])
    assert isinstance(turns[1], ContextOverflow) and "takes at most 4096" in str(turns[1])
    assert isinstance(turns[0], AgentTurn) and isinstance(turns[2], AgentTurn)


def test_another_refusal_is_a_failure_that_keeps_the_servers_reason(openai_server):
    base_url, _ = openai_server
    client = ChatClient(endpoint_params(base_url=base_url, model="some-other-model", max_retries=0), record=False)
    with pytest.raises(EndpointError) as refused:
        client.complete([{"role": "user", "content": "Hi"}], temperature=1.0, max_tokens=1)
    # `openai` alone would say only "Error code: 400": the reason is the server's `detail`.
    assert refused.type is EndpointError and "some-other-model" in str(refused.value)


# The two refusals below come from servers that can't run here (OpenAI's API needs the network, vLLM a GPU): a
# loopback server answers with the bodies they send, in the wording their documentation and issues show.
OTHER_SERVERS = {
    "OpenAI": {
        "error": {
            "message": "This model's maximum context length is 8192 tokens. However, your messages resulted in "
            "9000 tokens. Please reduce the length of the messages.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    },
    "vLLM": {
        "error": {
            "message": "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens "
            "(4900 in the messages, 100 in the completion). Please reduce the length of the messages or "
            "completion.",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        }
    },
    "a refusal of another kind": {"error": {"message": "temperature must be non-negative", "code": 400}},
}


@pytest.fixture
def answering(request):
    """A loopback server that answers every request with 400 and the body of `request.param`."""
    body = json.dumps(OTHER_SERVERS[request.param]).encode()

    class Refuse(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(400)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Refuse)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


@pytest.mark.parametrize(
    ("answering", "kind"),
    [("OpenAI", PromptTooLong), ("vLLM", PromptTooLong), ("a refusal of another kind", EndpointError)],
    indirect=["answering"],
)
def test_each_servers_wording_of_a_prompt_too_long_is_recognised(answering, kind):
    client = ChatClient(endpoint_params(base_url=answering, max_retries=0), record=False)
    with pytest.raises(EndpointError) as refused:
        client.complete([{"role": "user", "content": "Hi"}], temperature=1.0)
    assert refused.type is kind
