"""The `transformers` agent backend: well-formed turns whose log-probs are the model's, batching that
changes nothing, context overflow, and the same checkpoint served by `transformers serve`."""

from __future__ import annotations

import math

import polars as pl
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from sweetflow.agents.openai import OpenAIAgent
from sweetflow.agents.transformers import TransformersAgent, choose, sample, turn_seed
from sweetflow.backend.domain import sandbox_runtime
from sweetflow.backend.simulators import ScriptedHuman
from sweetflow.dialogue import AGENT, HUMAN, AgentTurn, ContextOverflow, EpisodeView, Message
from sweetflow.rollout.engine import Checkpoint, run_episodes
from sweetflow.tables import to_frame
from sweetflow.views import policy_chat
from tests.support.llm_server import serve_checkpoint
from tests.support.params import endpoint_params, episode_params, openai_agent, transformers_agent


def agent(checkpoint, **kw) -> TransformersAgent:
    return TransformersAgent(transformers_agent(str(checkpoint), **kw))


@pytest.fixture(scope="module")
def views(corpus) -> list[EpisodeView]:
    """Dialogue prefixes of different lengths (0, 1 and 2 exchanges), so batches need padding."""
    by_id = {t["task_id"]: t for t in corpus.train}
    out = []
    for i, demo in enumerate(corpus.demos[:6]):
        messages = [Message(t["role"], t["content"]) for t in demo["dialogue"]][: 2 * (i % 3)]
        out.append(EpisodeView(demo["task_id"], by_id[demo["task_id"]]["problem_description"], messages, demo["seed"],
                               max_turns=10))
    return out


def prompt_ids(policy: TransformersAgent, view: EpisodeView) -> list[int]:
    text = policy.tokenizer.apply_chat_template(policy_chat(view), tokenize=False, add_generation_prompt=True)
    return policy.tokenizer(text, add_special_tokens=False)["input_ids"]


def forward_logprobs(model, prompt: list[int], tokens: list[int]) -> torch.Tensor:
    """log p(token | prefix) of each generated token, from one forward pass over prompt + tokens."""
    with torch.no_grad():
        logits = model(torch.tensor([prompt + tokens])).logits[0, len(prompt) - 1 : -1]
    return torch.log_softmax(logits.float(), -1).gather(1, torch.tensor(tokens)[:, None]).squeeze(1)


def test_sampled_tokens_and_log_probs_match_a_forward_pass(checkpoint, views):
    policy = agent(checkpoint)
    prompts = [prompt_ids(policy, v) for v in views]
    generators = [torch.Generator().manual_seed(i) for i in range(len(views))]
    rows = sample(policy.model, prompts, generators, 1.0, 0.9, 20, 4096, policy.stop_ids, policy.pad_id)
    stop_ids = policy.stop_ids.tolist()
    for prompt, (tokens, logprobs) in zip(prompts, rows):
        assert torch.allclose(forward_logprobs(policy.model, prompt, tokens), torch.tensor(logprobs), atol=1e-4)
        assert [i for i, t in enumerate(tokens) if t in stop_ids] in ([], [len(tokens) - 1])  # nothing after a stop


def test_agent_turns_are_well_formed_and_carry_the_sampled_log_probs(checkpoint, views):
    policy = agent(checkpoint, max_new_tokens=24, batch_size=len(views))
    turns = policy.act(views)
    # The same draws as the agent's: one generator per episode, seeded by (episode seed, turn).
    generators = [torch.Generator().manual_seed(turn_seed(v)) for v in views]
    prompts = [prompt_ids(policy, v) for v in views]
    rows = sample(policy.model, prompts, generators, 1.0, 1.0, 24, 4096, policy.stop_ids, policy.pad_id)
    for view, turn, (tokens, logprobs) in zip(views, turns, rows):
        assert isinstance(turn, AgentTurn)
        assert turn.prompt == policy.tokenizer.apply_chat_template(
            policy_chat(view), tokenize=False, add_generation_prompt=True
        )
        assert turn.prompt.startswith("<|begin|><|system|>") and turn.prompt.endswith("<|assistant|>")
        assert turn.raw == policy.tokenizer.decode(tokens, skip_special_tokens=True)
        assert turn.message == turn.raw.strip() and turn.n_tokens == len(tokens) and 1 <= len(tokens) <= 24
        assert math.isfinite(turn.logprob_sum) and turn.logprob_sum < 0
        assert turn.logprob_sum == pytest.approx(sum(logprobs))
        assert turn.logprob_mean == pytest.approx(turn.logprob_sum / turn.n_tokens)


@settings(max_examples=50, deadline=None)
@given(
    logits=st.lists(st.floats(-8, 8) | st.just(float("-inf")), min_size=2, max_size=12).filter(
        lambda xs: any(x != float("-inf") for x in xs)
    ),
    temperature=st.sampled_from([0.5, 1.0, 2.0]),
    top_p=st.sampled_from([0.3, 0.9, 1.0]),
)
def test_draws_follow_the_tempered_nucleus(logits, temperature, top_p):
    """Uniforms spread evenly over [0, 1) land on each token in proportion to its mass (within one
    draw), never on a token outside the nucleus or of zero probability."""
    n = 1000
    row = torch.tensor(logits)
    chosen = choose(row.expand(n, -1), temperature, top_p, (torch.arange(n, dtype=torch.float64) + 0.5) / n)
    probs = torch.softmax(row / temperature, -1)
    ranked, order = probs.sort(descending=True)
    nucleus = order[ranked.cumsum(-1) - ranked < top_p]
    expected = torch.zeros_like(probs)
    expected[nucleus] = probs[nucleus] / probs[nucleus].sum()
    counts = torch.bincount(chosen, minlength=len(logits)).double()
    assert set(chosen.tolist()) <= set(nucleus.tolist())
    assert (counts - n * expected.double()).abs().max() <= 1.5


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_batching_and_left_padding_change_nothing(checkpoint, views, temperature):
    together = agent(checkpoint, temperature=temperature, max_new_tokens=32, batch_size=len(views)).act(views)
    alone = agent(checkpoint, temperature=temperature, max_new_tokens=32, batch_size=1).act(views)
    assert [t.message for t in together] == [t.message for t in alone]
    assert [t.logprob_sum for t in together] == pytest.approx([t.logprob_sum for t in alone], abs=1e-4)


def test_a_prompt_longer_than_the_context_fails_only_its_episode(checkpoint, views):
    long = EpisodeView("long", "Please " * 3000, [], seed=1, max_turns=10)
    turns = agent(checkpoint, max_new_tokens=8).act([views[0], long, views[1]])
    assert isinstance(turns[1], ContextOverflow) and "context holds 1536" in str(turns[1])
    assert isinstance(turns[0], AgentTurn) and isinstance(turns[2], AgentTurn)


def assert_well_formed(frame: pl.DataFrame, n: int, max_turns: int, logprobs: bool) -> None:
    assert frame.height == n and frame["failure"].is_null().all()
    for dialogue, answered in zip(frame["dialogue"], frame["answered"]):
        roles = [t["role"] for t in dialogue]
        assert roles == [AGENT, HUMAN] * (len(roles) // 2) + [AGENT]
        assert answered or len(roles) == 2 * max_turns - 1
        for turn in (t for t in dialogue if t["role"] == AGENT):
            assert turn["prompt"] and turn["raw"] is not None
            assert (turn["logprob_sum"] is not None and turn["n_tokens"] >= 1) == logprobs


def test_served_and_in_process_backends_both_produce_well_formed_episodes(checkpoint, corpus, sandbox, tmp_path):
    tasks, episodes = corpus.test[:3], episode_params(max_turns=3)

    def roll(policy, name):
        records = run_episodes(tasks, 2, policy, sandbox_runtime(ScriptedHuman(), sandbox), episodes, 0, Checkpoint(tmp_path / name))
        return to_frame(records)

    in_process = roll(agent(checkpoint, max_new_tokens=48), "transformers.jsonl")
    with serve_checkpoint(checkpoint) as (base_url, model):
        endpoint = endpoint_params(base_url=base_url, model=model, api_key_env="SWEETFLOW_TEST_KEY", concurrency=2)
        served = roll(OpenAIAgent(openai_agent(endpoint, max_new_tokens=48)), "openai.jsonl")
    assert_well_formed(in_process, 6, 3, logprobs=True)
    assert_well_formed(served, 6, 3, logprobs=False)  # `transformers serve` ignores `logprobs` (tests/llm_server.py)
