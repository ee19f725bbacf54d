"""The critic check (sweetflow.rl.critic_check): replaying a recorded dialogue reproduces it with the scripted
simulator, the policy takes over after the script, and agreement is counted by hand."""

from __future__ import annotations

import polars as pl

from sweetflow.agents.replay import ReplayAgent
from sweetflow.backend.agents import ScriptedExpert
from sweetflow.backend.domain import sandbox_runtime
from sweetflow.backend.sandbox.pool import Sandbox
from sweetflow.backend.scoring import check_references
from sweetflow.backend.simulators import ScriptedHuman
from sweetflow.backend.tasks.procedural import generate_tasks
from sweetflow.core.tables import to_frame
from sweetflow.dialogue import AGENT, HUMAN, AgentTurn, EpisodeView, Message
from sweetflow.rl.critic_check import agreement, continuation_tasks, pick_extremes
from sweetflow.rollout.engine import Checkpoint, run_episodes
from tests.support.params import episode_params, sandbox_params


class Recorder:
    """A policy that says a fixed line and remembers what it was shown."""

    def __init__(self):
        self.seen: list[EpisodeView] = []

    def act(self, views):
        self.seen += views
        return [AgentTurn(prompt="", raw="What else?", message="What else?") for _ in views]


def view(task_id: str, agent_said: list[str]) -> EpisodeView:
    messages = []
    for text in agent_said:
        messages += [Message(AGENT, text), Message(HUMAN, "ok")]
    return EpisodeView(task_id, "a problem", messages, seed=1, max_turns=10)


def test_replay_says_the_script_then_hands_over_to_the_policy():
    policy = Recorder()
    agent = ReplayAgent({"a": ["first", "second"], "b": []}, policy)
    turns = agent.act([view("a", []), view("a", ["first"]), view("a", ["first", "second"]), view("b", [])])
    assert [t.message for t in turns] == ["first", "second", "What else?", "What else?"]
    assert [v.task_id for v in policy.seen] == ["a", "b"]  # only the views past their script reach the policy


RANKED = pl.DataFrame(
    {
        "state_id": ["s1"] * 3 + ["s2"] * 3 + ["s3"] * 2,
        "candidate": [0, 1, 2, 0, 1, 2, 0, 1],
        "score": [0.5, 2.0, -1.0, 1.0, 1.0, 1.0, 0.3, 0.1],
    }
)


def test_extremes_are_the_best_and_worst_of_states_with_a_score_gap():
    picked = pick_extremes(RANKED, 10, seed=0)
    assert picked.select("state_id", "best", "worst").rows() == [("s1", 1, 2), ("s3", 0, 1)]  # s2: all tied
    assert pick_extremes(RANKED, 1, seed=0).height == 1


def test_agreement_counts_decided_states_by_hand():
    picked = pick_extremes(RANKED, 10, seed=0)
    outcomes = pl.DataFrame(
        {
            "task_id": ["s1#1", "s1#1", "s1#2", "s1#2", "s3#0", "s3#1"],
            "reward": [1.0, 0.5, 0.2, 0.2, 0.4, 0.4],
        }
    )
    result = agreement(picked, outcomes)
    # s1: best (candidate 1) 0.75 > worst 0.2 -> agrees; s3: 0.4 == 0.4 -> tied.
    assert result["states"] == 2 and result["states_decided"] == 1 and result["states_tied"] == 1
    assert result["ranking_agreement"] == 1.0
    flipped = outcomes.with_columns(
        pl.when(pl.col("task_id") == "s1#2").then(1.0).otherwise(pl.col("reward")).alias("reward")
    )
    assert agreement(picked, flipped)["ranking_agreement"] == 0.0


def test_continuations_replay_the_recorded_dialogue_with_the_scripted_simulator(tmp_path):
    train, _ = generate_tasks(3, 1, seed=11)
    with Sandbox(sandbox_params(workers=1)) as sandbox:
        checks = check_references(train, sandbox)
        tasks = [{**t, "expected": c.expected} for t, c in zip(train, checks)]
        recorded = to_frame(
            run_episodes(
                tasks,
                1,
                ScriptedExpert(1.0),
                sandbox_runtime(ScriptedHuman(), sandbox),
                episode_params(),
                0,
                Checkpoint(tmp_path / "a.jsonl"),
            )
        )
        # A state after the first exchange of each trajectory; two candidates, one of them the recorded turn.
        rows = []
        for task_id, dialogue in recorded.select("task_id", "dialogue").iter_rows():
            state = f"{task_id}:0:1"
            said = [t["content"] for t in dialogue if t["role"] == AGENT]
            rows += [(state, task_id, 0, 1, 2, 0, said[1]), (state, task_id, 0, 1, 2, 1, "I WANT TO ANSWER: pass")]
        candidates = pl.DataFrame(
            rows, schema=["state_id", "task_id", "sample", "turn", "position", "candidate", "message"], orient="row"
        )
        picked = pl.DataFrame({"state_id": candidates["state_id"].unique().sort(), "best": 0, "worst": 1})
        episode_tasks, scripts = continuation_tasks(picked, candidates, recorded, {t["task_id"]: t for t in tasks})
        assert len(episode_tasks) == 2 * recorded.height
        # After the script the expert goes on asking and answers: the recorded turn leads to the recorded end.
        outcomes = to_frame(
            run_episodes(
                episode_tasks,
                1,
                ReplayAgent(scripts, ScriptedExpert(1.0)),
                sandbox_runtime(ScriptedHuman(), sandbox),
                episode_params(),
                0,
                Checkpoint(tmp_path / "b.jsonl"),
            )
        )
    replayed = {t: d for t, d in outcomes.select("task_id", "dialogue").iter_rows()}
    for task_id, dialogue in recorded.select("task_id", "dialogue").iter_rows():
        again = replayed[f"{task_id}:0:1#0"]
        assert [t["content"] for t in again[:4]] == [t["content"] for t in dialogue[:4]]  # the human answers the same
    result = agreement(picked, outcomes)
    assert result["states_decided"] == recorded.height and result["ranking_agreement"] == 1.0
