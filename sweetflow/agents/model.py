"""Making a model agent from its params: a local checkpoint generating in process (`transformers`)
or a served model (`openai`)."""

from __future__ import annotations

from sweetflow.agents.openai import OpenAIAgent
from sweetflow.dialogue import Agent
from sweetflow.errors import InputError
from sweetflow.params import ModelAgentParams


def make_model_agent(params: ModelAgentParams) -> Agent:
    """The model agent `params` describe (backend 'transformers' or 'openai')."""
    if params.backend == "transformers":
        if not params.checkpoint:
            raise InputError("an agent with backend 'transformers' needs `checkpoint` (a checkpoint directory)")
        # torch and transformers load only when a model agent is made: a scripted stage starts in a second.
        from sweetflow.agents.transformers import TransformersAgent

        return TransformersAgent(params)
    if params.backend == "openai":
        return OpenAIAgent(params)
    raise InputError(f"backend {params.backend!r} is not a model: a model agent is 'transformers' or 'openai'")
