"""The `openai` agent against a real `transformers serve` on loopback: a dialogue that outgrows the served
model's context ends as it does with a local model, and a refusal keeps the server's reason."""

from __future__ import annotations

import pytest

from sweetflow.agents.openai import OpenAIAgent
from sweetflow.dialogue import AgentTurn, ContextOverflow, EpisodeView
from sweetflow.endpoint import ChatClient, EndpointError, PromptTooLong
from tests.support.params import endpoint_params, openai_agent
from tests.support.refusing_server import RefusingServer


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
            client.complete([{"role": "user", "content": "Hi"}], temperature=1.0)
    assert refused.type is kind
