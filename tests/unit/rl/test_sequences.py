"""From tables to trainer inputs (sweetflow.rl.sequences, sweetflow.rl.candidates) on the tiny
checkpoint: which tokens each view scores, the critic's training-time information, pairs that share
sequences, fresh candidates with their log-probs, and step pairs in the policy's view."""

from __future__ import annotations

import polars as pl
import pytest

from sweetflow.agents.transformers import TransformersAgent
from sweetflow.core.artifacts import JsonLines
from sweetflow.core.tables import to_frame
from sweetflow.dialogue import AGENT
from sweetflow.models.checkpoint import load_checkpoint
from sweetflow.rl.candidates import generate_candidates
from sweetflow.rl.pairs import sample_turn_states, step_pairs, trajectory_pairs
from sweetflow.rl.sequences import (
    NOT_SCORED,
    candidate_sequences,
    segmented,
    segmented_batch,
    step_pair_data,
    successful_chats,
    trajectory_pair_data,
)
from sweetflow.views import chat_for, dialogue_view, policy_instructions
from tests.support.params import transformers_agent


@pytest.fixture(scope="module")
def tokenizer(checkpoint):
    return load_checkpoint(checkpoint)[1]


@pytest.fixture(scope="module")
def tasks(corpus) -> dict[str, dict]:
    return {t["task_id"]: t for t in corpus.train}


@pytest.fixture(scope="module")
def trajectories(corpus) -> pl.DataFrame:
    return to_frame(corpus.demos)


def agent_turns(demo: dict) -> list[str]:
    return [t["content"] for t in demo["dialogue"] if t["role"] == AGENT]


def scored_text(tokenizer, seq, segment: int) -> str:
    return tokenizer.decode([i for i, s in zip(seq.input_ids, seq.segment_ids) if s == segment])


def test_each_scoring_marks_the_agent_turns_it_should(tokenizer, tasks, corpus):
    demo = next(d for d in corpus.demos if len(agent_turns(d)) >= 2)
    chat = chat_for(dialogue_view(tasks[demo["task_id"]], demo["dialogue"], 10), None)
    turns = agent_turns(demo)
    per_turn = segmented(tokenizer, chat, "turns", 10_000)
    assert max(per_turn.segment_ids) == len(turns) - 1
    for k, text in enumerate(turns):  # each segment is that turn's text (and its end-of-message token)
        assert scored_text(tokenizer, per_turn, k).startswith(text)
    whole = segmented(tokenizer, chat, "all", 10_000)
    assert whole.input_ids == per_turn.input_ids
    assert [s >= 0 for s in whole.segment_ids] == [s >= 0 for s in per_turn.segment_ids] and max(whole.segment_ids) == 0
    last = segmented(tokenizer, chat, "last", 10_000)
    assert scored_text(tokenizer, last, 0).startswith(turns[-1]) and set(last.segment_ids) == {NOT_SCORED, 0}
    assert per_turn.segment_ids[0] == NOT_SCORED  # the prompt is never scored


def test_the_critic_view_adds_the_reference_and_scores_the_same_turns(tokenizer, tasks, corpus):
    demo = corpus.demos[0]
    task = tasks[demo["task_id"]]
    view = dialogue_view(task, demo["dialogue"], 10)
    policy = segmented(tokenizer, chat_for(view, None), "turns", 10_000)
    critic = segmented(tokenizer, chat_for(view, task["ground_truth"]), "turns", 10_000)
    critic_chat = chat_for(view, task["ground_truth"])
    assert task["ground_truth"].strip() in critic_chat[0]["content"]  # in the system message, before the dialogue
    assert critic_chat[1:] == chat_for(view, None)[1:]
    assert "the final answer is" in tokenizer.decode(critic.input_ids)
    assert "the final answer is" not in tokenizer.decode(policy.input_ids)
    assert len(critic.input_ids) > len(policy.input_ids)
    for k in range(max(policy.segment_ids) + 1):
        assert scored_text(tokenizer, critic, k) == scored_text(tokenizer, policy, k)


def test_a_sequence_longer_than_the_context_is_left_out_not_cut(tokenizer, tasks, corpus):
    demo = corpus.demos[0]
    chat = chat_for(dialogue_view(tasks[demo["task_id"]], demo["dialogue"], 10), None)
    full = segmented(tokenizer, chat, "turns", 10_000)
    assert segmented(tokenizer, chat, "turns", len(full.input_ids)) == full
    assert segmented(tokenizer, chat, "turns", len(full.input_ids) - 1) is None


def test_a_batch_is_tokenised_as_each_chat_alone(tokenizer, tasks, corpus):
    chats = [chat_for(dialogue_view(tasks[d["task_id"]], d["dialogue"], 10), None) for d in corpus.demos[:12]]
    alone = [segmented(tokenizer, chat, "turns", 10_000) for chat in chats]
    lengths = sorted(len(s.input_ids) for s in alone)
    assert lengths[0] < lengths[-1]  # chats of different lengths: nothing is padded to a common width
    limit = lengths[len(lengths) // 2]
    expected = [s if len(s.input_ids) <= limit else None for s in alone]
    assert segmented_batch(tokenizer, chats, "turns", limit) == expected
    assert segmented_batch(tokenizer, [], "turns", limit) == []


def test_trajectory_pairs_share_sequences_and_count_what_does_not_fit(tokenizer, tasks, trajectories):
    pairs = trajectory_pairs(trajectories)
    assert pairs.height > 0, "the demonstrations should hold a task with a success and a failure"
    data, keys, dropped = trajectory_pair_data(tokenizer, tasks, trajectories, pairs, True, "turns", 10_000)
    assert dropped == 0 and len(data.pairs) == pairs.height
    assert len(keys) == len(data.sequences) == len(set(keys))  # one sequence per trajectory, however many pairs
    for (c, r), row in zip(data.pairs, pairs.iter_rows(named=True)):
        assert (
            keys[c] == f"{row['task_id']}:{row['chosen_sample']}"
            and keys[r] == f"{row['task_id']}:{row['rejected_sample']}"
        )
    shortest = min(len(s.input_ids) for s in data.sequences)
    _, _, dropped = trajectory_pair_data(tokenizer, tasks, trajectories, pairs, True, "turns", shortest - 1)
    assert dropped == pairs.height


def test_successful_chats_are_the_policy_view_of_reward_1_trajectories(tasks, trajectories):
    chats = successful_chats(tasks, trajectories, 1.0)
    assert len(chats) == int((trajectories["reward"] >= 1.0).sum()) > 0
    assert all("the final answer is" not in chat[0]["content"] for chat in chats)


def test_rebuilt_prompts_state_the_limit_each_trajectory_records(tasks, trajectories):
    """The turn limit in a rebuilt system message is the one the trajectory's agent was told, read
    from the trajectory itself."""
    assert set(trajectories["max_turns"]) == {10}
    three = trajectories.with_columns(max_turns=pl.lit(3, pl.Int32))
    for frame, limit in ((trajectories, 10), (three, 3)):
        chats = successful_chats(tasks, frame, 1.0)
        assert chats and {chat[0]["content"] for chat in chats} == {policy_instructions("backend", limit)}


def test_successful_chats_in_the_critics_view_hold_the_reference(tasks, trajectories):
    kept = trajectories.filter(pl.col("reward") >= 1.0)
    policy = successful_chats(tasks, trajectories, 1.0)
    critic = successful_chats(tasks, trajectories, 1.0, True)
    for task_id, p, c in zip(kept["task_id"], policy, critic):
        assert tasks[task_id]["ground_truth"].strip() in c[0]["content"]
        assert tasks[task_id]["ground_truth"].strip() not in p[0]["content"]
        assert c[1:] == p[1:]  # the same dialogue; only the system message differs


@pytest.fixture(scope="module")
def candidates(checkpoint, tasks, trajectories) -> tuple[pl.DataFrame, pl.DataFrame, int]:
    states = sample_turn_states(trajectories, 0.2, seed=0)
    agent = TransformersAgent(transformers_agent(str(checkpoint), max_new_tokens=24))
    frame, failed = generate_candidates(agent, tasks, trajectories, states, 3, seed=0)
    return states, frame, failed


def test_candidates_are_n_per_state_with_the_policys_log_probs(candidates):
    states, frame, failed = candidates
    assert failed == 0 and frame.height == 3 * states.height
    assert frame.group_by("state_id").len()["len"].to_list() == [3] * states.height
    assert (frame["logprob_sum"] <= 0).all() and (frame["n_tokens"] > 0).all()
    assert frame["logprob_mean"].to_list() == pytest.approx((frame["logprob_sum"] / frame["n_tokens"]).to_list())
    # Each candidate samples with its own seed: a state's candidates are not copies of one another.
    assert frame.group_by("state_id").agg(pl.col("message").n_unique())["message"].max() > 1


def test_the_same_seed_gives_the_same_candidates(checkpoint, candidates, tasks, trajectories):
    states, frame, _ = candidates
    agent = TransformersAgent(transformers_agent(str(checkpoint), max_new_tokens=24))
    again, _ = generate_candidates(agent, tasks, trajectories, states.head(2), 3, seed=0)
    assert (
        again["message"].to_list()
        == frame.filter(pl.col("state_id").is_in(states.head(2)["state_id"].implode()))["message"].to_list()
    )


class Interrupted(Exception):
    """Stands for a kill between two batches of candidates."""


class CountingAgent:
    """The agent, its batches counted; raises Interrupted at batch `fail_at`."""

    def __init__(self, agent, fail_at: int | None = None):
        self.agent, self.fail_at, self.batches = agent, fail_at, 0

    def act(self, views):
        self.batches += 1
        if self.batches == self.fail_at:
            raise Interrupted
        return self.agent.act(views)


def test_candidates_cut_off_between_batches_resume_with_the_batches_kept(checkpoint, tasks, trajectories, tmp_path):
    states = sample_turn_states(trajectories, 0.2, seed=0).head(3)  # 9 candidates: batches of 4, 4 and 1
    agent = TransformersAgent(transformers_agent(str(checkpoint), max_new_tokens=24))
    whole, _ = generate_candidates(agent, tasks, trajectories, states, 3, seed=0, chunk=4)
    kept = JsonLines(tmp_path / "candidates.jsonl")
    with pytest.raises(Interrupted):
        generate_candidates(CountingAgent(agent, fail_at=2), tasks, trajectories, states, 3, 0, chunk=4, keep=kept)
    assert [r["start"] for r in kept.read()] == [0]
    rerun = CountingAgent(agent)
    resumed, failed = generate_candidates(rerun, tasks, trajectories, states, 3, seed=0, chunk=4, keep=kept)
    assert rerun.batches == 2 and failed == 0  # the two batches the cut-off run did not finish
    assert resumed.equals(whole)


def test_step_pairs_become_state_plus_candidate_sequences_in_the_policy_view(
    tokenizer, candidates, tasks, trajectories
):
    _, frame, _ = candidates
    scored = frame.with_columns(score=pl.col("logprob_mean"))  # any score will do to draw pairs
    pairs = step_pairs(scored, 2, seed=0)
    data, dropped = step_pair_data(tokenizer, tasks, trajectories, frame, pairs, 10_000)
    assert dropped == 0 and len(data.pairs) == pairs.height
    # Training batches hold a state's pairs together: its state is read once for all its candidates.
    states = pairs["state_id"].to_list()
    assert sorted(i for g in data.groups for i in g) == list(range(len(data.pairs)))
    assert all(len({states[i] for i in group}) == 1 for group in data.groups)
    assert len(data.groups) == pairs["state_id"].n_unique()
    items, per_batch = data.batches_of(8, 8)
    assert per_batch == round(8 / (len(data.pairs) / len(data.groups))) and sum(map(len, items)) == len(data.pairs)
    assert len(items) == len(data.groups)
    # A micro-batch smaller than a group: single pairs, a batch of them as many as the effective batch.
    assert data.batches_of(8, 1) == ([[pair] for pair in data.pairs], 8)
    messages = {(s, c): m for s, c, m in frame.select("state_id", "candidate", "message").iter_rows()}
    for (c, r), row in zip(data.pairs, pairs.iter_rows(named=True)):
        assert scored_text(tokenizer, data.sequences[c], 0).startswith(messages[(row["state_id"], row["chosen"])])
        assert scored_text(tokenizer, data.sequences[r], 0).startswith(messages[(row["state_id"], row["rejected"])])
        assert "the final answer is" not in tokenizer.decode(data.sequences[c].input_ids)
    # The critic view of the same candidates carries the reference; the scored action is the same.
    with_info = candidate_sequences(tokenizer, tasks, trajectories, frame.head(1), True, 10_000)[0]
    without = candidate_sequences(tokenizer, tasks, trajectories, frame.head(1), False, 10_000)[0]
    assert scored_text(tokenizer, with_info, 0) == scored_text(tokenizer, without, 0)
    assert len(with_info.input_ids) > len(without.input_ids)
