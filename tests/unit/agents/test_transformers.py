"""The `transformers` agent backend: well-formed turns whose log-probs are the model's, batching that
changes nothing, prefix reuse that changes no token, context overflow, no deprecated transformers
API, and the same checkpoint served by `transformers serve`."""

from __future__ import annotations

import math
import random

import polars as pl
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from sweetflow.agents.openai import OpenAIAgent
from sweetflow.agents.transformers import Prefix, ReservedLayer, TransformersAgent, choose, sample, turn_seed
from sweetflow.backend.domain import sandbox_runtime
from sweetflow.backend.simulators import ScriptedHuman
from sweetflow.core.tables import to_frame
from sweetflow.dialogue import AGENT, HUMAN, AgentTurn, ContextOverflow, EpisodeView, Message
from sweetflow.rollout.engine import Checkpoint, run_episodes
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
        out.append(
            EpisodeView(
                demo["task_id"], by_id[demo["task_id"]]["problem_description"], messages, demo["seed"], max_turns=10
            )
        )
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
    for prompt, (tokens, logprobs, prefix) in zip(prompts, rows):
        assert prefix is None  # nothing kept unless asked
        assert torch.allclose(forward_logprobs(policy.model, prompt, tokens), torch.tensor(logprobs), atol=1e-4)
        assert [i for i, t in enumerate(tokens) if t in stop_ids] in ([], [len(tokens) - 1])  # nothing after a stop


def test_agent_turns_are_well_formed_and_carry_the_sampled_log_probs(checkpoint, views):
    policy = agent(checkpoint, max_new_tokens=24, batch_size=len(views))
    turns = policy.act(views)
    # The same draws as the agent's: one generator per episode, seeded by (episode seed, turn).
    generators = [torch.Generator().manual_seed(turn_seed(v)) for v in views]
    prompts = [prompt_ids(policy, v) for v in views]
    rows = sample(policy.model, prompts, generators, 1.0, 1.0, 24, 4096, policy.stop_ids, policy.pad_id)
    for view, turn, (tokens, logprobs, _) in zip(views, turns, rows):
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


@settings(max_examples=60, deadline=None)
@given(
    rows=st.integers(1, 8),
    filled=st.integers(1, 6),
    data=st.data(),
)
def test_a_reserved_cache_selects_rows_as_indexing_does(rows, filled, data):
    """Dropping finished rows (ascending indices, moved in place) and copying a prompt's rows to its
    samples (repeated indices) leave each layer's keys and values those of plain indexing, bit for
    bit, and the next token is written after them."""
    capacity = filled + 3
    keys, values = torch.randn(rows, 2, filled, 4), torch.randn(rows, 2, filled, 4)
    layer = ReservedLayer(capacity)
    layer.update(keys, values)
    ascending = data.draw(st.lists(st.integers(0, rows - 1), min_size=1, unique=True).map(sorted))
    repeated = data.draw(st.lists(st.integers(0, len(ascending) - 1), min_size=1, max_size=10))
    for indices in (ascending, repeated):
        chosen = torch.tensor(indices)
        layer.batch_select_indices(chosen)
        keys, values = keys[chosen], values[chosen]
        assert torch.equal(layer.keys, keys) and torch.equal(layer.values, values)
        new_key, new_value = torch.randn(len(indices), 2, 1, 4), torch.randn(len(indices), 2, 1, 4)
        got = layer.update(new_key, new_value)
        keys, values = torch.cat([keys, new_key], dim=2), torch.cat([values, new_value], dim=2)
        assert torch.equal(got[0], keys) and torch.equal(got[1], values)


@settings(max_examples=12, derandomize=True)
@given(
    seed=st.integers(0, 2**16),
    rows=st.integers(1, 5),
    temperature=st.sampled_from([0.0, 1.0]),
    diverge=st.sampled_from([None, 0.5, 1.0]),
)
def test_a_reused_prefix_generates_the_same_tokens(tiny_checkpoint, seed, rows, temperature, diverge):
    """A second turn read on top of the first turn's kept keys and values draws the same tokens, with
    the same log-probs up to float rounding, as reading its whole prompt again: for prompts of
    different lengths, equal prompts, a prefix that the new prompt leaves part way (`diverge`: the
    share of it kept), and rows with no prefix at all."""
    policy = agent(tiny_checkpoint)
    rng = random.Random(seed)
    vocab = policy.model.config.vocab_size
    first = [[rng.randrange(8, vocab) for _ in range(rng.randint(1, 40))] for _ in range(rows)]
    first[-1] = list(first[0])  # two rows with one prompt, read once

    def draw(prompts, prefixes=None, turn=0):
        generators = [torch.Generator().manual_seed(seed * 10 + 2 * i + turn) for i in range(len(prompts))]
        return sample(
            policy.model, prompts, generators, temperature, 1.0, 12, 4096, policy.stop_ids, policy.pad_id, prefixes
        )

    turn_one = draw(first, [None] * rows)
    kept = [prefix for _, _, prefix in turn_one]
    # A prefix holds the prompt and every token it drew but the last, which was never read.
    for prompt, (tokens, _, p) in zip(first, turn_one):
        assert isinstance(p, Prefix) and p.ids == prompt + tokens[:-1] and p.keys[0].shape[1] == len(p.ids)
    second = []
    for prompt, (tokens, _, _) in zip(first, turn_one):
        grown = prompt + tokens + [rng.randrange(8, vocab) for _ in range(rng.randint(1, 20))]
        if diverge is not None and diverge < 1:  # rewrite the tail of what was kept
            cut = int(len(prompt) * diverge)
            grown = grown[:cut] + [(t + 1) % vocab for t in grown[cut : len(prompt)]] + grown[len(prompt) :]
        second.append(grown)
    prefixes = [None if diverge is None and i % 2 else p for i, p in enumerate(kept)]
    reused, fresh = draw(second, prefixes, turn=1), draw(second, turn=1)
    assert [tokens for tokens, _, _ in reused] == [tokens for tokens, _, _ in fresh]
    for (_, a, _), (_, b, _) in zip(reused, fresh):
        assert a == pytest.approx(b, abs=1e-4)


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_episodes_with_prefix_reuse_say_the_same_as_without(checkpoint, corpus, sandbox, tmp_path, temperature):
    """Whole episodes through the rollout engine: the same messages, turns and rewards with each
    episode's keys and values kept from turn to turn; the agent forgets an episode it is no longer
    asked about."""
    tasks, episodes = corpus.test[:3], episode_params(max_turns=4)

    def roll(policy, name):
        return run_episodes(
            tasks, 2, policy, sandbox_runtime(ScriptedHuman(), sandbox), episodes, 0, Checkpoint(tmp_path / name)
        )

    knobs = {"max_new_tokens": 48, "temperature": temperature}
    reusing = agent(checkpoint, reuse_prefix=True, **knobs)
    with_reuse, without = roll(reusing, "reuse.jsonl"), roll(agent(checkpoint, **knobs), "fresh.jsonl")
    assert sum(r["n_turns"] for r in without) > len(without)  # some episode had a second turn to reuse for
    for a, b in zip(with_reuse, without):
        assert [t["content"] for t in a["dialogue"]] == [t["content"] for t in b["dialogue"]]
        assert (a["n_turns"], a["reward"], a["ended_by"]) == (b["n_turns"], b["reward"], b["ended_by"])
        agent_turns = [(t, u) for t, u in zip(a["dialogue"], b["dialogue"]) if t["role"] == AGENT]
        assert [t["n_tokens"] for t, _ in agent_turns] == [u["n_tokens"] for _, u in agent_turns]
        assert [t["logprob_sum"] for t, _ in agent_turns] == pytest.approx([u["logprob_sum"] for _, u in agent_turns])
    # It holds only the episodes of its last round (an episode it is not asked for again is over).
    last = max(r["n_turns"] for r in with_reuse)
    assert set(reusing.prefixes) == {(r["task_id"], r["seed"]) for r in with_reuse if r["n_turns"] == last}


@pytest.mark.filterwarnings("error::FutureWarning", "error::DeprecationWarning")
@pytest.mark.parametrize("reuse_prefix", [False, True])
def test_generation_uses_no_deprecated_transformers_api(tiny_checkpoint, views, reuse_prefix):
    """transformers warns (FutureWarning) before it removes an API; here any such warning fails."""
    policy = agent(tiny_checkpoint, max_new_tokens=8, reuse_prefix=reuse_prefix)
    first = policy.act(views)
    grown = [
        EpisodeView(
            v.task_id,
            v.problem_description,
            [*v.messages, Message(AGENT, t.message), Message(HUMAN, "yes")],
            v.seed,
            max_turns=v.max_turns,
        )
        for v, t in zip(views, first)
    ]
    assert all(isinstance(t, AgentTurn) for t in policy.act(grown))


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
        records = run_episodes(
            tasks, 2, policy, sandbox_runtime(ScriptedHuman(), sandbox), episodes, 0, Checkpoint(tmp_path / name)
        )
        return to_frame(records)

    in_process = roll(agent(checkpoint, max_new_tokens=48), "transformers.jsonl")
    with serve_checkpoint(checkpoint) as (base_url, model):
        endpoint = endpoint_params(base_url=base_url, model=model, api_key_env="SWEETFLOW_TEST_KEY", concurrency=2)
        served = roll(OpenAIAgent(openai_agent(endpoint, max_new_tokens=48)), "openai.jsonl")
    assert_well_formed(in_process, 6, 3, logprobs=True)
    assert_well_formed(served, 6, 3, logprobs=False)  # `transformers serve` ignores `logprobs` (tests/llm_server.py)
