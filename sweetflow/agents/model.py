"""Making a model agent from its params: a local checkpoint generating in process (`transformers`),
the same checkpoint behind a server started for it (`served`), or a model served elsewhere (`openai`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sweetflow.agents.openai import OpenAIAgent
from sweetflow.agents.server import serve, served_record
from sweetflow.core.errors import InputError
from sweetflow.core.params import AgentParams, EndpointParams, ModelAgentParams, OpenAIAgentParams, ServedAgentParams
from sweetflow.dialogue import Agent


@contextmanager
def open_model_agent(params: ModelAgentParams) -> Iterator[Agent]:
    """The model agent `params` describe, for the length of the `with` block: a `served` agent's
    server runs only inside it, and is stopped on leaving."""
    if params.backend in ("transformers", "served") and not params.checkpoint:
        raise InputError(f"an agent with backend {params.backend!r} needs `checkpoint` (a checkpoint directory)")
    if params.backend == "transformers":
        # torch and transformers load only when a model agent is made: a scripted stage starts in a second.
        from sweetflow.agents.transformers import TransformersAgent

        yield TransformersAgent(params)
    elif params.backend == "served":
        with serve(params.server, params.checkpoint) as server:
            yield OpenAIAgent(through(params, server.base_url, server.model), record=False)
    elif params.backend == "openai":
        yield OpenAIAgent(params)
    else:
        raise InputError(
            f"backend {params.backend!r} is not a model: a model agent is 'transformers', 'served' or 'openai'"
        )


def through(params: ServedAgentParams, base_url: str, model: str) -> OpenAIAgentParams:
    """A served agent as the `openai` agent that talks to its running server."""
    # A loopback server takes no key: the empty variable name reads none.
    endpoint = EndpointParams(
        base_url=base_url,
        model=model,
        api_key_env="",
        timeout_s=params.timeout_s,
        max_retries=params.max_retries,
        concurrency=params.concurrency,
    )
    return OpenAIAgentParams(
        backend="openai",
        endpoint=endpoint,
        temperature=params.temperature,
        top_p=params.top_p,
        max_new_tokens=params.max_new_tokens,
    )


def served_records(agents: dict[str, AgentParams], input_hashes: dict[str, str]) -> dict[str, dict]:
    """What the servers of the `served` agents among `agents` serve, by the names a stage gives them
    (the params key of the agent, or `seed<k>`), as its manifest records it: the checkpoint and its
    content hash (from the stage's inputs), the model name and the command line."""
    return {
        name: {
            **served_record(p.server, p.checkpoint),
            "checkpoint_hash": input_hashes.get(Path(p.checkpoint).as_posix()),
        }
        for name, p in agents.items()
        if p.backend == "served"
    }
