"""Token sequences for the learning code: dialogues in the policy's or the critic's view, tokenised,
with the segment of every scored token, and the preference datasets built from them.

Scored tokens are the agent's turns, as `sweetflow.models.assistant_masks` finds them in any chat
template (the end-of-message token that closes a turn included, as in SFT). What a segment is depends on the use:
- "turns": each agent turn its own segment (the critic's per-turn advantages),
- "all": every agent turn in one segment (MT-DPO; the official critic's whole-trajectory variant),
- "last": only the last agent turn (one action after a state: candidates, step pairs).
Every other token (prompt, human replies, the critic's training-time information, padding) is
`NOT_SCORED`.

- `trajectory_pair_data`: trajectory pairs, in the critic's view or the policy's;
- `candidate_sequences`: a state followed by one candidate, its last turn scored (ranking), and
  `step_pair_data`: step pairs as such sequences (the SWEET-RL policy);
- `successful_chats`: the successful trajectories in the policy's view (rejection fine-tuning).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import polars as pl
from tqdm import tqdm

from sweetflow.core.tables import dialogues_by_trajectory, trajectory_key, turn_limits_by_trajectory
from sweetflow.models.assistant_masks import assistant_masks
from sweetflow.views import chat_for, dialogue_view

NOT_SCORED = -1  # segment id of every token that is not part of a scored response
TOKENISE_BATCH = 512  # chats tokenised in one call (a batch uses every core; the bar moves per batch)

Scoring = Literal["turns", "all", "last"]


@dataclass
class SegmentedSequence:
    """One tokenised sequence and the segment of each token (NOT_SCORED outside responses)."""

    input_ids: list[int]
    segment_ids: list[int]


@dataclass
class PairData:
    sequences: list[SegmentedSequence]
    pairs: list[tuple[int, int]]  # (chosen, rejected) indices into `sequences`
    # Pairs that share sequences or a prefix (the pairs of one state, of one task), as lists of
    # indices into `pairs`: training batches hold whole groups, so that what they share is read once.
    groups: list[list[int]] | None = None

    def tokens(self) -> int:
        return sum(len(self.sequences[i].input_ids) + len(self.sequences[j].input_ids) for i, j in self.pairs)

    def with_context_segment(self) -> PairData:
        """The same data with every unscored token after the first in one more segment, the last: the
        tokens outside the responses, for an NLL term over the whole dialogue (the preference loss
        leaves that segment out of the scores). Position 0 stays unscored: nothing predicts it."""
        context = max(k for s in self.sequences for k in s.segment_ids) + 1
        sequences = [
            SegmentedSequence(
                s.input_ids, [NOT_SCORED] + [context if k == NOT_SCORED else k for k in s.segment_ids[1:]]
            )
            for s in self.sequences
        ]
        return PairData(sequences, self.pairs, self.groups)

    def batches_of(self, batch_size: int, micro_batch_size: int) -> tuple[list[list[tuple[int, int]]], int]:
        """(training items, items per batch), an item being a list of pairs: whole groups with about
        `batch_size` pairs per batch, or single pairs when there are no groups or a group is on
        average larger than a micro-batch (one forward pass) can hold."""
        per_group = len(self.pairs) / len(self.groups) if self.groups else 1
        if per_group == 1 or per_group > micro_batch_size:
            return [[pair] for pair in self.pairs], batch_size
        items = [[self.pairs[i] for i in group] for group in self.groups]
        return items, max(1, round(batch_size / per_group))


def group_pairs(keys: list[str]) -> list[list[int]]:
    """Indices of equal keys, grouped, in order of first appearance."""
    groups: dict[str, list[int]] = {}
    for i, key in enumerate(keys):
        groups.setdefault(key, []).append(i)
    return list(groups.values())


def segmented(tokenizer, chat: list[dict], scoring: Scoring, max_length: int) -> SegmentedSequence | None:
    """The chat as token ids with segment ids; None when it does not fit in `max_length` tokens
    (cutting it would drop the last turns, the ones that decide the outcome)."""
    return segmented_batch(tokenizer, [chat], scoring, max_length)[0]


def segmented_batch(
    tokenizer, chats: list[list[dict]], scoring: Scoring, max_length: int
) -> list[SegmentedSequence | None]:
    """`segmented` of each chat, tokenised in one call: the Rust tokenizer encodes a batch on every
    core, ~1.7x faster than one chat at a time for the thousands of candidates of a ranking."""
    if not chats:
        return []
    return [_segments(ids, mask, scoring, max_length) for ids, mask in assistant_masks(tokenizer, chats)]


def _segments(ids: list[int], mask: list[int], scoring: Scoring, max_length: int) -> SegmentedSequence | None:
    if not any(mask):
        raise ValueError("the chat has no agent turn to score")
    if len(ids) > max_length:
        return None
    runs, turn, previous = [], -1, 0
    for m in mask:
        if m and not previous:
            turn += 1
        runs.append(turn if m else NOT_SCORED)
        previous = m
    if scoring == "all":
        segments = [0 if r != NOT_SCORED else NOT_SCORED for r in runs]
    elif scoring == "last":
        segments = [0 if r == turn else NOT_SCORED for r in runs]
    else:
        segments = runs
    return SegmentedSequence(ids, segments)


def context_length(tokenizer, model_config) -> int:
    """The longest sequence the model reads: its position limit, else the tokenizer's."""
    return getattr(model_config, "max_position_embeddings", None) or tokenizer.model_max_length


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
    dialogues, limits = dialogues_by_trajectory(trajectories), turn_limits_by_trajectory(trajectories)
    index: dict[tuple[str, int], int | None] = {}
    sequences: list[SegmentedSequence] = []
    keys: list[str] = []

    def sequence_of(task_id: str, sample: int) -> int | None:
        key = (task_id, sample)
        if key not in index:
            task = tasks[task_id]
            view = dialogue_view(task, dialogues[key], limits[key])
            chat = chat_for(view, task["ground_truth"] if with_info else None)
            seq = segmented(tokenizer, chat, scoring, max_length)
            index[key] = None if seq is None else len(sequences)
            if seq is not None:
                sequences.append(seq)
                keys.append(trajectory_key(task_id, sample))
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
    dialogues, limits = dialogues_by_trajectory(trajectories), turn_limits_by_trajectory(trajectories)
    chats = []
    for row in candidates.iter_rows(named=True):
        task, key = tasks[row["task_id"]], (row["task_id"], row["sample"])
        prefix = dialogues[key][: row["position"]]
        view = dialogue_view(task, prefix + [{"role": "agent", "content": row["message"]}], limits[key])
        chats.append(chat_for(view, task["ground_truth"] if with_info else None))
    out = []
    with tqdm(total=len(chats), desc="tokenise", unit="action") as bar:
        for start in range(0, len(chats), TOKENISE_BATCH):
            batch = chats[start : start + TOKENISE_BATCH]
            out += segmented_batch(tokenizer, batch, "last", max_length)
            bar.update(len(batch))
    return out


def successful_chats(
    tasks: dict[str, dict], trajectories: pl.DataFrame, min_reward: float, with_info: bool = False
) -> list[list[dict]]:
    """The chat of every usable trajectory whose reward reaches `min_reward`: the policy's, or with
    `with_info` the critic's (the reference solution in the system message)."""
    kept = trajectories.filter(pl.col("failure").is_null() & (pl.col("reward") >= min_reward))
    rows = kept.select("task_id", "dialogue", "max_turns").iter_rows()
    views = [(tasks[t], dialogue_view(tasks[t], d, n)) for t, d, n in rows]
    return [chat_for(view, task["ground_truth"] if with_info else None) for task, view in views]


def step_pair_data(
    tokenizer,
    tasks: dict[str, dict],
    trajectories: pl.DataFrame,
    candidates: pl.DataFrame,
    pairs: pl.DataFrame,
    max_length: int,
) -> tuple[PairData, int]:
    """Step pairs (`sweetflow.rl.pairs.step_pairs`) as sequences in the policy's view, each candidate
    of a pair once, after its state; and how many pairs were dropped for a side longer than `max_length`."""
    used = pl.concat(
        [pairs.select("state_id", candidate="chosen"), pairs.select("state_id", candidate="rejected")]
    ).unique()
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
