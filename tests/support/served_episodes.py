"""Test infrastructure: episodes of the `openai` agent and simulator against OpenAI-compatible endpoints, on four
procedural test tasks whose references ran (the session fixture `checked_tasks`, which tests/conftest.py registers
for every test module). Not a test module.

    frame = roll(checked_tasks, endpoint(base_url, model), tmp_path / "c.jsonl")
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from sweetflow.agents.openai import OpenAIAgent
from sweetflow.backend.domain import sandbox_runtime
from sweetflow.backend.sandbox.pool import Sandbox
from sweetflow.backend.scoring import check_references
from sweetflow.backend.simulators import OpenAIHuman
from sweetflow.backend.tasks.procedural import generate_tasks
from sweetflow.core.params import EndpointParams
from sweetflow.core.tables import to_frame
from sweetflow.endpoint import ChatClient
from sweetflow.rollout.engine import Checkpoint, run_episodes
from tests.support.params import endpoint_params, episode_params, openai_agent, sandbox_params

MAX_TURNS = 3
MAX_NEW_TOKENS = 12  # each side's, so a reply's size cap is 64 KiB + 12 KiB


@pytest.fixture(scope="session")
def checked_tasks() -> list[dict]:
    _, test = generate_tasks(0, 4, seed=9)
    with Sandbox(sandbox_params(workers=1)) as sb:
        return [{**t, "expected": c.expected} for t, c in zip(test, check_references(test, sb))]


def endpoint(base_url: str, model: str, **kw) -> EndpointParams:
    """An endpoint whose key is read from SWEETFLOW_TEST_KEY."""
    return endpoint_params(base_url=base_url, model=model, api_key_env="SWEETFLOW_TEST_KEY", **kw)


def roll(
    tasks: list[dict], ep: EndpointParams, checkpoint: Path, samples: int = 1, human: EndpointParams | None = None
) -> pl.DataFrame:
    """Every task's episodes, the agent asking `ep` and the simulated human `human` (default: `ep` too)."""
    agent = OpenAIAgent(openai_agent(ep, max_new_tokens=MAX_NEW_TOKENS))
    simulator = OpenAIHuman(ChatClient(human or ep), max_reply_chars=400, max_new_tokens=MAX_NEW_TOKENS)
    with Sandbox(sandbox_params(workers=1)) as sb:
        records = run_episodes(
            tasks,
            samples,
            agent,
            sandbox_runtime(simulator, sb, ep.concurrency),
            episode_params(max_turns=MAX_TURNS),
            0,
            Checkpoint(checkpoint),
        )
    return to_frame(records)
