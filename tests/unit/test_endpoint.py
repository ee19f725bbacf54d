"""A dead endpoint: each request fails after (max_retries + 1) x timeout_s plus the backoff, as
EndpointParams says, and the settings docs/usage.md documents give up on one in minutes. A refusal keeps
the server's reason, and a prompt refused as too long is told apart (`PromptTooLong`)."""

from __future__ import annotations

import re
import socket
import threading
import time

import pytest
import yaml

from sweetflow.core.params import EndpointParams
from sweetflow.endpoint import ChatClient, EndpointError, PromptTooLong
from tests.support.params import endpoint_params
from tests.support.project import ROOT
from tests.support.refusing_server import RefusingServer


def worst_case_s(endpoint: EndpointParams) -> float:
    """What EndpointParams' descriptions promise for an endpoint that never answers."""
    backoff = sum(min(0.5 * 2**i, 8.0) for i in range(endpoint.max_retries))
    return (endpoint.max_retries + 1) * endpoint.timeout_s + backoff


def endpoints_in(node: object) -> list[dict]:
    if not isinstance(node, dict):
        return []
    found = [node["endpoint"]] if isinstance(node.get("endpoint"), dict) else []
    return found + [e for value in node.values() for e in endpoints_in(value)]


def test_the_documented_endpoints_give_up_on_a_dead_one_in_minutes():
    blocks = re.findall(r"```yaml\n(.*?)```", (ROOT / "docs/usage.md").read_text(), re.S)
    documented = [EndpointParams(**e) for block in blocks for e in endpoints_in(yaml.safe_load(block))]
    assert len(documented) >= 2
    assert all(worst_case_s(e) <= 5 * 60 for e in documented), [worst_case_s(e) for e in documented]


@pytest.fixture
def silent_server():
    """A server that accepts connections and never answers; yields its URL and the connections made."""
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []

    def accept():
        while True:
            try:
                accepted.append(listener.accept()[0])
            except OSError:  # closed at teardown
                return

    threading.Thread(target=accept, daemon=True).start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1", accepted
    listener.close()
    for conn in accepted:
        conn.close()


def test_a_dead_endpoint_costs_what_the_description_says(silent_server):
    base_url, accepted = silent_server
    endpoint = endpoint_params(base_url=base_url, timeout_s=0.3, max_retries=2)
    started = time.monotonic()
    with pytest.raises(EndpointError, match="APITimeoutError"):
        ChatClient(endpoint).complete([{"role": "user", "content": "hello?"}], temperature=0, max_tokens=4)
    elapsed = time.monotonic() - started
    assert len(accepted) == endpoint.max_retries + 1
    # The backoff has up to 25% jitter off. The number of attempts is checked exactly above, so the
    # upper bound only has to catch a wait of another kind; its slack absorbs a loaded machine.
    assert 0.75 * worst_case_s(endpoint) <= elapsed <= worst_case_s(endpoint) + 5, elapsed


def test_another_refusal_is_a_failure_that_keeps_the_servers_reason(openai_server):
    base_url, _ = openai_server
    client = ChatClient(endpoint_params(base_url=base_url, model="some-other-model", max_retries=0), record=False)
    with pytest.raises(EndpointError) as refused:
        client.complete([{"role": "user", "content": "Hi"}], temperature=1.0, max_tokens=1)
    # `openai` alone would say only "Error code: 400": the reason is the server's `detail`.
    assert refused.type is EndpointError and "some-other-model" in str(refused.value)


# The two refusals below come from servers that can't run here (OpenAI's API needs the network, vLLM a GPU): a
# loopback RefusingServer answers with the bodies they send, worded as their documentation and issues show.
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


@pytest.mark.parametrize(
    ("server", "kind"),
    [("OpenAI", PromptTooLong), ("vLLM", PromptTooLong), ("a refusal of another kind", EndpointError)],
)
def test_each_servers_wording_of_a_prompt_too_long_is_recognised(server, kind):
    with RefusingServer(lambda headers: OTHER_SERVERS[server]) as refusing:
        client = ChatClient(endpoint_params(base_url=refusing.base_url, max_retries=0), record=False)
        with pytest.raises(EndpointError) as refused:
            client.complete([{"role": "user", "content": "Hi"}], temperature=1.0, max_tokens=4)
    assert refused.type is kind
