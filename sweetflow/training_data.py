"""From the pipeline's tables to what the trainers read (DESIGN.md §2 steps 3-7).

- `trajectory_pair_data`: trajectory pairs as token sequences, in the critic's view (with the
  reference solution) or the policy's; the critic scores each agent turn, MT-DPO all of them at once.
- `generate_candidates`: N fresh actions of a sampling policy at sampled turn states, with the
  log-probs the policy reports.
- `candidate_sequences`: a state followed by one candidate, its last turn scored (ranking), and
  `step_pair_data`: step pairs as such sequences (the SWEET-RL policy).
- `successful_chats`: the successful trajectories in the policy's view (rejection fine-tuning).
"""

from __future__ import annotations

import hashlib

import polars as pl
from tqdm import tqdm

from sweetflow.agents import Agent
from sweetflow.dialogue import AgentTurn
from sweetflow.models.preference_trainer import PairData, group_pairs
from sweetflow.models.sequences import Scoring, chat_for, dialogue_view, segmented, segmented_batch
from sweetflow.preference import SegmentedSequence

TOKENISE_BATCH = 512  # chats tokenised in one call (a batch uses every core; the bar moves per batch)

CANDIDATE_SCHEMA = pl.Schema(
    {
        "state_id": pl.String,
        "task_id": pl.String,
        "sample": pl.Int32,
        "turn": pl.Int32,
        "position": pl.Int32,  # the state is the trajectory's dialogue[:position]
        "candidate": pl.Int32,
        "message": pl.String,
        "logprob_sum": pl.Float64,  # the sampling policy's, without the training-time information
        "logprob_mean": pl.Float64,
        "n_tokens": pl.Int64,
    }
)


def trajectory_key(task_id: str, sample: int) -> str:
    return f"{task_id}:{sample}"


def trajectory_pair_data(
    tokenizer,
    tasks: dict[str, dict],
    trajectories: pl.DataFrame,
    pairs: pl.DataFrame,
    with_info: bool,
    scoring: Scoring,
    max_length: int,
) -> tuple[PairData, list[str], int]:
    """(data, the trajectory key of each sequence, pairs dropped because a side is longer than
    `max_length`). Each trajectory is tokenised once however many pairs it is in."""
    dialogues = {
        trajectory_key(t, s): d for t, s, d in trajectories.select("task_id", "sample", "dialogue").iter_rows()
    }
    index: dict[str, int | None] = {}
    sequences: list[SegmentedSequence] = []
    keys: list[str] = []

    def sequence_of(task_id: str, sample: int) -> int | None:
        key = trajectory_key(task_id, sample)
        if key not in index:
            task = tasks[task_id]
            chat = chat_for(dialogue_view(task, dialogues[key]), task["ground_truth"] if with_info else None)
            seq = segmented(tokenizer, chat, scoring, max_length)
            index[key] = None if seq is None else len(sequences)
            if seq is not None:
                sequences.append(seq)
                keys.append(key)
        return index[key]

    kept, owners, dropped = [], [], 0
    for task_id, chosen, rejected in pairs.select("task_id", "chosen_sample", "rejected_sample").iter_rows():
        c, r = sequence_of(task_id, chosen), sequence_of(task_id, rejected)
        if c is None or r is None:
            dropped += 1
        else:
            kept.append((c, r))
            owners.append(task_id)
    return PairData(sequences, kept, group_pairs(owners)), keys, dropped


def candidate_seed(seed: int, state_id: str, candidate: int) -> int:
    digest = hashlib.sha256(f"{seed}:{state_id}:{candidate}".encode()).digest()
    return int.from_bytes(digest[:6], "big")


def generate_candidates(
    agent: Agent, tasks: dict[str, dict], trajectories: pl.DataFrame, states: pl.DataFrame, n: int, seed: int,
    chunk: int = 128,
) -> tuple[pl.DataFrame, int]:
    """`n` actions of `agent` at each state (CANDIDATE_SCHEMA rows) and how many generations failed
    (e.g. a prompt longer than the model's context); a failed candidate is left out."""
    dialogues = {
        trajectory_key(t, s): d for t, s, d in trajectories.select("task_id", "sample", "dialogue").iter_rows()
    }
    jobs = []
    for state in states.iter_rows(named=True):
        prefix = dialogues[trajectory_key(state["task_id"], state["sample"])][: state["position"]]
        for k in range(n):
            view = dialogue_view(tasks[state["task_id"]], prefix, candidate_seed(seed, state["state_id"], k))
            jobs.append((state, k, view))
    rows, failed = [], 0
    with tqdm(total=len(jobs), desc="candidates", unit="action") as bar:
        for start in range(0, len(jobs), chunk):
            part = jobs[start : start + chunk]
            for (state, k, _), turn in zip(part, agent.act([view for _, _, view in part])):
                if isinstance(turn, AgentTurn) and turn.logprob_mean is not None:
                    rows.append({**state, "candidate": k, "message": turn.message, "logprob_sum": turn.logprob_sum,
                                 "logprob_mean": turn.logprob_mean, "n_tokens": turn.n_tokens})  # fmt: skip
                else:
                    failed += 1
            bar.update(len(part))
    frame = pl.DataFrame(rows, schema=CANDIDATE_SCHEMA) if rows else CANDIDATE_SCHEMA.to_frame()
    return frame.select(CANDIDATE_SCHEMA.names()), failed


def candidate_sequences(
    tokenizer,
    tasks: dict[str, dict],
    trajectories: pl.DataFrame,
    candidates: pl.DataFrame,
    with_info: bool,
    max_length: int,
) -> list[SegmentedSequence | None]:
    """Per candidate row: its state followed by the candidate as the agent's next turn, that turn
    scored; None when the whole does not fit in `max_length`."""
    dialogues = {
        trajectory_key(t, s): d for t, s, d in trajectories.select("task_id", "sample", "dialogue").iter_rows()
    }
    chats = []
    for row in candidates.iter_rows(named=True):
        task = tasks[row["task_id"]]
        prefix = dialogues[trajectory_key(row["task_id"], row["sample"])][: row["position"]]
        view = dialogue_view(task, prefix + [{"role": "agent", "content": row["message"]}])
        chats.append(chat_for(view, task["ground_truth"] if with_info else None))
    out = []
    with tqdm(total=len(chats), desc="tokenise", unit="action") as bar:
        for start in range(0, len(chats), TOKENISE_BATCH):
            batch = chats[start : start + TOKENISE_BATCH]
            out += segmented_batch(tokenizer, batch, "last", max_length)
            bar.update(len(batch))
    return out


def successful_chats(tasks: dict[str, dict], trajectories: pl.DataFrame, min_reward: float) -> list[list[dict]]:
    """The policy's chat of every usable trajectory whose reward reaches `min_reward`."""
    kept = trajectories.filter(pl.col("failure").is_null() & (pl.col("reward") >= min_reward))
    return [
        chat_for(dialogue_view(tasks[task_id], dialogue), None)
        for task_id, dialogue in kept.select("task_id", "dialogue").iter_rows()
    ]


def step_pair_data(
    tokenizer, tasks: dict[str, dict], trajectories: pl.DataFrame, candidates: pl.DataFrame, pairs: pl.DataFrame,
    max_length: int,
) -> tuple[PairData, int]:
    """Step pairs (`sweetflow.pairs.step_pairs`) as sequences in the policy's view, each candidate
    of a pair once, after its state; and how many pairs were dropped for a side longer than `max_length`."""
    used = pl.concat([pairs.select("state_id", candidate="chosen"), pairs.select("state_id", candidate="rejected")]).unique()
    rows = candidates.join(used, on=["state_id", "candidate"]).sort("state_id", "candidate")
    sequences = candidate_sequences(tokenizer, tasks, trajectories, rows, False, max_length)
    index = {key: i for i, key in enumerate(rows.select("state_id", "candidate").iter_rows())}
    kept_sequences, position = [], {}
    for i, seq in enumerate(sequences):
        if seq is not None:
            position[i] = len(kept_sequences)
            kept_sequences.append(seq)
    kept, owners, dropped = [], [], 0
    for state_id, chosen, rejected in pairs.select("state_id", "chosen", "rejected").iter_rows():
        c, r = position.get(index[(state_id, chosen)]), position.get(index[(state_id, rejected)])
        if c is None or r is None:
            dropped += 1
        else:
            kept.append((c, r))
            owners.append(state_id)
    return PairData(kept_sequences, kept, group_pairs(owners)), dropped
