"""Trajectories made elsewhere as offline data (`rollout.source: import`): lines in ColBench's
official shape, read into the table every learning stage reads (`sweetflow.core.tables.TRAJECTORY_SCHEMA`).

A line is `{"task": <ColBench task>, "dialogue_history": [...], "answer": str, "reward": float | null}`;
the dialogue starts with the agent (`assistant`: `content`, and the model's `input` and `output` when
a model played it) and alternates with the human (`user`). The official offline data set (15k backend
trajectories of Llama-3.1-8B-Instruct) has this shape, as has `sweetflow export-trajectories`.

A line's task is found by content (`Domain.offline_task_id`: for the backend, the reference and the
tests), so that the official lines land on the tasks the `colbench` task source made of the official
train file. The file is read line by line and written in batches: memory stays bounded whatever its
length.
"""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
from tqdm import tqdm

from sweetflow.core.errors import InputError
from sweetflow.core.inputs import ImportRowError, iter_jsonl, open_regular
from sweetflow.core.tables import OUTPUT_CHARS, TURN, to_frame
from sweetflow.dialogue import AGENT, HUMAN, final_answer
from sweetflow.domain import DomainRuntime, get_domain
from sweetflow.params import Params
from sweetflow.rollout.metrics import COUNTS, summarize_episodes

ROLES = {"assistant": AGENT, "user": HUMAN}
BATCH = 256  # lines scored and written together: the sandbox's batch, and the bound on what is held


def parse_trajectory(row: dict, path: Path | str, line: int, max_turns: int | None = None) -> dict:
    """The TRAJECTORY_SCHEMA fields one line gives (dialogue, answer, reward as the file has it, ...),
    without task_id and sample; a bad field is an ImportRowError naming file, line and field. With
    `max_turns`, the turn limit recorded, and an unanswered dialogue of that many agent turns ended by it."""
    history = row.get("dialogue_history")
    if not isinstance(history, list):
        raise ImportRowError(path, line, "dialogue_history", "expected a list of turns")
    dialogue = [_turn(t, path, line, i) for i, t in enumerate(history)]
    for i, turn in enumerate(dialogue):
        expected = AGENT if i % 2 == 0 else HUMAN
        if turn["role"] != expected:
            raise ImportRowError(
                path,
                line,
                f"dialogue_history[{i}].role",
                f"expected {'assistant' if expected == AGENT else 'user'}: a dialogue starts with the agent and "
                "the two take turns",
            )
    if not dialogue:
        raise ImportRowError(path, line, "dialogue_history", "empty: no agent turn")
    answer = row.get("answer")
    if not isinstance(answer, str):
        raise ImportRowError(path, line, "answer", "expected a string")
    reward = row.get("reward")
    if reward is not None and not _is_reward(reward):
        raise ImportRowError(path, line, "reward", f"expected a number from 0 to 1 (or null), got {reward!r:.40}")
    agent_turns = [t for t in dialogue if t["role"] == AGENT]
    answered = final_answer(agent_turns[-1]["content"]) is not None
    ended_by = "answer" if answered else "max_turns" if max_turns and len(agent_turns) >= max_turns else None
    return {
        "seed": None,  # not in the official shape
        "dialogue": dialogue,
        "answer": answer,
        "answered": answered,
        "ended_by": ended_by,
        "n_turns": len(agent_turns),
        "max_turns": max_turns,
        "reward": float(reward) if reward is not None else None,
        "success": reward is not None and float(reward) == 1.0,
        "score_status": None,
        "failure": None,
        "test_outputs": None,
    }


def _is_reward(value: object) -> bool:
    # json reads NaN and Infinity, and true is an int to Python: none of them is a score, and each
    # would pass into every mean and success rate computed from the import.
    return type(value) in (int, float) and 0 <= value <= 1


def _turn(turn: object, path: Path | str, line: int, i: int) -> dict:
    field = f"dialogue_history[{i}]"
    if not isinstance(turn, dict) or not isinstance(turn.get("content"), str):
        raise ImportRowError(path, line, field, "expected an object with a string `content`")
    role = ROLES.get(turn.get("role"))
    if role is None:
        raise ImportRowError(
            path, line, f"{field}.role", f"expected 'assistant' or 'user', got {turn.get('role')!r:.40}"
        )
    out = dict.fromkeys(TURN.to_schema(), None)
    out.update(role=role, content=turn["content"])
    if role == AGENT:
        for key, column in (("input", "prompt"), ("output", "raw")):
            if turn.get(key) is not None and not isinstance(turn[key], str):
                raise ImportRowError(path, line, f"{field}.{key}", "expected a string (or no value)")
            out[column] = turn.get(key)
    return out


def import_rollout(path: Path, train: list[dict], val: list[dict], domain: str, params: Params, out: Path) -> dict:
    """Read the trajectory lines of `path` that lie on the first `rollout.max_tasks` of the `train`
    tasks into `out` (a Parquet file, the file's order kept, samples numbered per task in that order)
    and return the rollout's metrics. Lines on `val` tasks, or on later training tasks, are skipped
    and counted; a line on any other task is an error, as is a malformed one. Answers are scored
    again by the domain's scorer (`rollout.import_reward: sandbox`) or keep the file's reward (`file`)."""
    try:  # a missing path, a device or a pipe is named before a line is counted
        open_regular(path, params.inputs).close()
    except InputError as e:
        raise InputError(f"rollout.import_file: {e}") from None
    p, d = params.rollout, get_domain(domain)
    offline_ids, validation = d.offline_task_ids(train), set(d.offline_task_ids(val))
    kept = {t["task_id"]: t for t in train[: p.max_tasks]}
    stats, samples, batch = Stats(p.import_reward), {}, []
    scorer = d.open(params.domain(domain)) if p.import_reward == "sandbox" else nullcontext()
    with pq.ParquetWriter(out, to_frame([]).to_arrow().schema) as writer, scorer as runtime:

        def flush() -> None:
            frame = to_frame(_scored(batch, runtime))
            writer.write_table(frame.to_arrow())
            stats.add(frame, [file_reward for _, _, file_reward in batch], domain, kept)
            batch.clear()

        lines = iter_jsonl(path, bounds=params.inputs)
        for line, row in tqdm(lines, total=_count_lines(path), desc=f"importing {path}", unit="line"):
            stats.lines += 1
            if not isinstance(row.get("task"), dict):
                raise ImportRowError(path, line, "task", "expected an object with the ColBench task")
            key = d.offline_task_id(row["task"], path, line)
            record = parse_trajectory(row, path, line, params.episodes.max_turns)
            task_id = offline_ids.get(key)
            if task_id is None:
                if key in validation:  # the validation split is carved out of the same train file
                    stats.skipped_validation += 1
                    continue
                raise ImportRowError(
                    path,
                    line,
                    "task",
                    f"no training task of {domain} has this reference and these tests (task {key}): the file must "
                    f"come from the tasks `{domain}.tasks` makes (the official offline data: source 'colbench' on "
                    "the official train file)",
                )
            if task_id not in kept:
                stats.skipped_beyond_max_tasks += 1
                continue
            if p.import_reward == "file" and record["reward"] is None:
                raise ImportRowError(
                    path, line, "reward", "null, and rollout.import_reward 'file' trusts the file's reward"
                )
            samples[task_id] = samples.get(task_id, -1) + 1
            batch.append((kept[task_id], {"task_id": task_id, "sample": samples[task_id], **record}, record["reward"]))
            if len(batch) >= BATCH:
                flush()
        if batch:
            flush()
    if not samples:
        raise InputError(
            f"{path}: none of its {stats.lines} lines lies on one of the first {len(kept)} training tasks "
            f"({stats.skipped_validation} on validation tasks, {stats.skipped_beyond_max_tasks} on later training "
            "tasks: rollout.max_tasks)"
        )
    return {**stats.metrics(), "source": "import", "import_file": Path(path).as_posix(), "tasks": len(samples)}


def _scored(batch: list[tuple[dict, dict, float | None]], runtime: DomainRuntime | None) -> list[dict]:
    """The batch's records, each with this run's score of its answer (no runtime: the file's reward stands)."""
    records = [record for _, record, _ in batch]
    if runtime is None:
        return records
    for record, score in zip(records, runtime.score([task for task, _, _ in batch], [r["answer"] for r in records])):
        outputs = None if score.outputs is None else [o if o is None else o[:OUTPUT_CHARS] for o in score.outputs]
        record.update(reward=score.reward, success=score.success, score_status=score.status, test_outputs=outputs)
    return records


class Stats:
    """The import's metrics, added up batch by batch: the episodes' summary (means weighted by each
    batch's size, counts summed), the lines skipped, and how the file's rewards compare with ours."""

    def __init__(self, reward_source: str):
        self.reward_source = reward_source
        self.lines = self.skipped_validation = self.skipped_beyond_max_tasks = 0
        self.summaries: list[dict] = []
        self.file_rewards, self.file_reward_sum, self.agreeing = 0, 0.0, 0

    def add(self, frame: pl.DataFrame, file_rewards: list[float | None], domain: str, tasks: dict[str, dict]) -> None:
        self.summaries.append(summarize_episodes(frame, domain, [tasks[t] for t in frame["task_id"].unique()]))
        for ours, theirs in zip(frame["reward"], file_rewards):
            if theirs is not None:
                self.file_rewards += 1
                self.file_reward_sum += theirs
                self.agreeing += abs(ours - theirs) <= 1e-6

    def metrics(self) -> dict:
        n = sum(s["count"] for s in self.summaries)
        merged = {
            key: sum(s[key] for s in self.summaries)
            if key in COUNTS
            else sum(s[key] * s["count"] for s in self.summaries) / n
            for key in (self.summaries[0] if self.summaries else ())
        }
        return {
            **merged,
            "reward_source": self.reward_source,
            "lines": self.lines,
            "skipped_validation": self.skipped_validation,
            "skipped_beyond_max_tasks": self.skipped_beyond_max_tasks,
            "file_rewards": self.file_rewards,
            "file_reward_mean": self.file_reward_sum / self.file_rewards if self.file_rewards else None,
            # the share of the file's rewards this run's scorer gives again (1.0 when the file's are trusted)
            "file_reward_agreement": self.agreeing / self.file_rewards if self.file_rewards else None,
        }


def _count_lines(path: Path | str) -> int:
    """Lines of a file, for the progress bar's total (read in blocks: cheap next to parsing them)."""
    with open(path, "rb") as fh:
        return sum(block.count(b"\n") for block in iter(lambda: fh.read(1 << 20), b""))
