"""Why a backend episode or action is good or bad: what the mechanism metrics count.

A backend task's reward depends on two things the agent does: asking for every hidden fact, and
then copying the facts into the right code. So a failed episode either answered with facts missing
(it never got one of them told) or miscopied (every fact was told, the answer still fails). An action
at a state is good when it moves the dialogue towards success: a question that gets a fact told that
was not told before, or a final answer that passes every test. It is bad otherwise: a question that
brings out nothing new, a premature answer (facts still missing) that fails, or a miscopied answer.

"Told" means the fact's statement appears in one of the human's replies. The scripted human replies
with the statements themselves; an LLM human paraphrases, so with one the counts are a lower bound.
Tasks without facts (the official data) get no diagnosis.
"""

from __future__ import annotations

import polars as pl

from sweetflow.backend.simulators import ScriptedHuman
from sweetflow.core.tables import dialogues_by_trajectory
from sweetflow.dialogue import AGENT, HUMAN, Message, final_answer

GOOD_KINDS = ("new_fact", "correct")


def told(task: dict, replies: list[str]) -> set[int]:
    """Indices of the task's facts whose statement one of `replies` contains."""
    return {i for i, f in enumerate(task["facts"]) if any(f["fact"] in r for r in replies)}


def failure_kind(task: dict, dialogue: list[dict], success: bool) -> str | None:
    """None for a success; 'facts_missing' or 'miscopied' for a failure on a task with facts; 'other'
    for a failure on a task without them."""
    if success:
        return None
    if not len(task.get("facts") or []):
        return "other"
    replies = [turn["content"] for turn in dialogue if turn["role"] == HUMAN]
    return "miscopied" if len(told(task, replies)) == len(task["facts"]) else "facts_missing"


def failure_breakdown(tasks: dict[str, dict], rows: list[tuple[str, list[dict], bool]]) -> dict:
    """Shares of all episodes (task_id, dialogue, success) that failed with facts missing, miscopied,
    or otherwise (tasks without facts)."""
    counts = {"facts_missing": 0, "miscopied": 0, "other": 0}
    for task_id, dialogue, success in rows:
        kind = failure_kind(tasks[task_id], dialogue, bool(success))
        if kind:
            counts[kind] += 1
    n = len(rows)
    return {f"failed_{k}": (v / n if n else 0.0) for k, v in counts.items()}


def label_action(task: dict, messages: list[Message], action: str, human: ScriptedHuman) -> tuple[str, str | None]:
    """(kind, answer to score) of `action` said after `messages`. An answer's kind is settled by its
    score (`settle`): it is returned as 'premature' or 'miscopied' with the answer to run."""
    known = told(task, [m.content for m in messages if m.role == HUMAN])
    answer = final_answer(action)
    if answer is None:
        reply = human.reply(task, [*messages, Message(AGENT, action)])
        return ("new_fact" if told(task, [reply]) - known else "no_new_fact"), None
    return ("miscopied" if len(known) == len(task["facts"]) else "premature"), answer


def settle(kind: str, success: bool) -> str:
    """An answer that passes every test is correct, whatever was still untold."""
    return "correct" if success else kind


def label_candidates(
    candidates: pl.DataFrame, trajectories: pl.DataFrame, tasks: dict[str, dict], human: ScriptedHuman, score
) -> pl.DataFrame:
    """Each candidate's kind and whether it is good (state_id, candidate, kind, good). `score(tasks,
    answers)` runs the answers against the tasks' tests (`DomainRuntime.score`)."""
    dialogues = dialogues_by_trajectory(trajectories)
    rows, to_score = [], []
    for state_id, task_id, sample, position, candidate, message in candidates.select(
        "state_id", "task_id", "sample", "position", "candidate", "message"
    ).iter_rows():
        task = tasks[task_id]
        prefix = [Message(t["role"], t["content"]) for t in dialogues[(task_id, sample)][:position]]
        kind, answer = label_action(task, prefix, message, human)
        rows.append([state_id, candidate, kind])
        if answer is not None:
            to_score.append((len(rows) - 1, task, answer))
    scores = score([t for _, t, _ in to_score], [a for _, _, a in to_score]) if to_score else []
    for (row, _, _), s in zip(to_score, scores):
        rows[row][2] = settle(rows[row][2], bool(s.success))
    frame = pl.DataFrame(
        rows,
        schema={"state_id": pl.String, "candidate": candidates.schema["candidate"], "kind": pl.String},
        orient="row",
    )
    return frame.with_columns(good=pl.col("kind").is_in(GOOD_KINDS))
