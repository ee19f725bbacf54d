"""The `openai` agent against a real `transformers serve` on loopback: a dialogue that outgrows the served
model's context ends as it does with a local model."""

from __future__ import annotations

from sweetflow.agents.openai import OpenAIAgent
from sweetflow.dialogue import AgentTurn, ContextOverflow, EpisodeView
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
