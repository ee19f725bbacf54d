"""The rollout engine: many collaboration episodes advancing together, resumable.

Each round asks the agent for the next turn of every live episode in one batch, then gets the
simulated human's replies concurrently. Finished episodes are scored (in the sandbox, or rendered)
and appended to a checkpoint file in batches; a run killed at any point and restarted with the same
checkpoint reuses every episode it saved and ends with exactly one trajectory per (task, sample).
"""

from __future__ import annotations

import hashlib
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import polars as pl
from tqdm import tqdm

from sweetflow.core.artifacts import JsonLines
from sweetflow.core.errors import StageFailed
from sweetflow.core.params import EpisodeParams
from sweetflow.core.secrets import redact
from sweetflow.core.tables import OUTPUT_CHARS, to_frame
from sweetflow.dialogue import AGENT, HUMAN, Agent, AgentTurn, ContextOverflow, EpisodeView, Message, final_answer
from sweetflow.domain import DomainRuntime, Score, get_domain
from sweetflow.params import Params


def episode_seed(seed: int, task_id: str, sample: int) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed}:{task_id}:{sample}".encode()).digest()[:6], "big")


@dataclass
class Episode:
    task: dict
    sample: int
    seed: int
    domain: str
    view_fields: dict  # what scripted agents may read (DomainRuntime.view_fields)
    max_turns: int  # the turn limit the agent is told (episodes.max_turns)
    messages: list[Message] = field(default_factory=list)
    turns: list[AgentTurn] = field(default_factory=list)
    answer: str | None = None
    answered: bool = False
    ended_by: str | None = None
    failure: str | None = None

    @property
    def over(self) -> bool:
        return self.answer is not None or self.failure is not None

    @property
    def key(self) -> tuple[str, int]:
        return self.task["task_id"], self.sample

    def view(self) -> EpisodeView:
        return EpisodeView(
            task_id=self.task["task_id"],
            problem_description=self.task["problem_description"],
            messages=list(self.messages),
            seed=self.seed,
            domain=self.domain,
            max_turns=self.max_turns,
            **self.view_fields,
        )

    def dialogue(self) -> list[dict]:
        rows, agent_turns = [], iter(self.turns)
        for m in self.messages:
            row = {"role": m.role, "content": m.content}
            if m.role == AGENT:
                row.update({k: v for k, v in asdict(next(agent_turns)).items() if k != "message"})
            rows.append(row)
        return rows


class Checkpoint(JsonLines):
    """Finished episodes, one JSON line each, appended batch by batch."""

    def load(self) -> dict[tuple[str, int], dict]:
        """The episodes to keep by (task_id, sample): failed ones are run again on resume."""
        return {(r["task_id"], r["sample"]): r for r in self.read() if r.get("failure") is None}


def run_episodes(
    tasks: list[dict],
    samples_per_task: int,
    agent: Agent,
    runtime: DomainRuntime,
    params: EpisodeParams,
    seed: int,
    checkpoint: Checkpoint,
    desc: str = "episodes",
) -> list[dict]:
    """Run (or finish) every (task, sample) episode of `runtime`'s domain; return their records in
    task, sample order."""
    done = checkpoint.load()
    todo = [
        Episode(
            task, s, episode_seed(seed, task["task_id"], s), runtime.name, runtime.view_fields(task), params.max_turns
        )
        for task in tasks
        for s in range(samples_per_task)
        if (task["task_id"], s) not in done
    ]
    total = len(tasks) * samples_per_task
    if done:
        print(f"{desc}: resuming: {len(done)} of {total} episodes already done", file=sys.stderr)
    bar = tqdm(total=total, initial=len(done), desc=desc, unit="episode")
    live, finished = todo, []
    try:
        _advance(live, finished, done, agent, runtime, params, checkpoint, bar)
    except BaseException:  # a crash, a SIGTERM (`run_stage` makes it an exit): what finished is kept first
        kept = {id(ep) for ep in finished}
        over = finished + [ep for ep in live if ep.over and id(ep) not in kept]
        if over:
            try:
                checkpoint.append(_score(over, runtime))
            except Exception as e:  # the scorer broke too: the first error is the one to show
                print(f"{desc}: {len(over)} finished episodes could not be kept ({e})", file=sys.stderr)
        raise
    finally:
        bar.close()
    return [done[(t["task_id"], s)] for t in tasks for s in range(samples_per_task)]


def _advance(
    live: list[Episode],
    finished: list[Episode],
    done: dict,
    agent: Agent,
    runtime: DomainRuntime,
    params: EpisodeParams,
    checkpoint: Checkpoint,
    bar: tqdm,
) -> None:
    """Every live episode a turn at a time until each is over, the finished ones scored and kept every
    `params.flush_every` (`finished` holds those not yet kept)."""
    with ThreadPoolExecutor(runtime.human_concurrency) as pool:
        while live:
            for ep, turn in zip(live, agent.act([ep.view() for ep in live])):
                if isinstance(turn, ContextOverflow):
                    ep.answer, ep.ended_by = (ep.turns[-1].message if ep.turns else ""), "context"
                    continue
                if isinstance(turn, Exception):
                    ep.failure = redact(f"agent: {turn}")[:500]
                    continue
                ep.turns.append(turn)
                ep.messages.append(Message(AGENT, turn.message))
                answer = final_answer(turn.message)
                if answer is not None:
                    ep.answer, ep.answered, ep.ended_by = answer, True, "answer"
                elif len(ep.turns) >= params.max_turns:
                    ep.answer, ep.ended_by = turn.message, "max_turns"
            waiting = [ep for ep in live if not ep.over]
            replies = pool.map(lambda ep: _reply(runtime.human, ep), waiting)
            for ep, reply in zip(waiting, replies):
                if isinstance(reply, Exception):
                    ep.failure = redact(f"simulator: {reply}")[:500]
                else:
                    ep.messages.append(Message(HUMAN, reply))
            finished += [ep for ep in live if ep.over]
            live[:] = [ep for ep in live if not ep.over]
            if len(finished) >= params.flush_every or (not live and finished):
                records = _score(finished, runtime)
                checkpoint.append(records)
                done.update({(r["task_id"], r["sample"]): r for r in records})
                bar.update(len(records))
                finished.clear()


def _reply(human, ep: Episode) -> str | Exception:
    try:
        return human.reply(ep.task, ep.messages)
    except Exception as e:  # noqa: BLE001 - any simulator fault fails this episode only, with its reason
        return e


def _score(episodes: list[Episode], runtime: DomainRuntime) -> list[dict]:
    answered = [ep for ep in episodes if ep.failure is None]
    scores = runtime.score([ep.task for ep in answered], [ep.answer for ep in answered])
    by_key = {ep.key: s for ep, s in zip(answered, scores)}
    return [_record(ep, by_key.get(ep.key, runtime.unscored)) for ep in episodes]


def _record(ep: Episode, score: Score) -> dict:
    return {
        "task_id": ep.task["task_id"],
        "sample": ep.sample,
        "seed": ep.seed,
        "dialogue": ep.dialogue(),
        "answer": ep.answer or "",
        "answered": ep.answered,
        "ended_by": ep.ended_by if ep.failure is None else None,
        "n_turns": len(ep.turns),
        "max_turns": ep.max_turns,
        "reward": score.reward,
        "success": score.success,
        "score_status": score.status,
        "failure": ep.failure,
        "test_outputs": None
        if score.outputs is None
        else [o if o is None else o[:OUTPUT_CHARS] for o in score.outputs],
        **(score.extra or {}),
    }


class TooManyFailures(StageFailed):
    pass


def collect(
    tasks: list[dict],
    agent: Agent,
    params: Params,
    domain: str,
    samples_per_task: int,
    seed: int,
    checkpoint: Path,
    desc: str,
) -> pl.DataFrame:
    """Run the episodes of a stage in `domain`, with the simulator and scoring its params name; fail
    loudly when more episodes failed than `episodes.max_failure_share` allows (the checkpoint keeps
    the rest)."""
    with get_domain(domain).open(params.domain(domain)) as runtime:
        records = run_episodes(
            tasks, samples_per_task, agent, runtime, params.episodes, seed, Checkpoint(checkpoint), desc=desc
        )
    frame = to_frame(records)
    failed = frame.filter(pl.col("failure").is_not_null())
    if frame.height and failed.height / frame.height > params.episodes.max_failure_share:
        reasons = failed["failure"].value_counts(sort=True).head(3).rows()
        raise TooManyFailures(
            f"{failed.height} of {frame.height} episodes failed (more than episodes.max_failure_share = "
            f"{params.episodes.max_failure_share}); most common reasons: {reasons}. Rerun to retry them: "
            f"finished episodes are kept in {checkpoint}."
        )
    return frame
