"""The rollout engine: many collaboration episodes advancing together, resumable.

Each round asks the agent for the next turn of every live episode in one batch, then gets the
simulated human's replies concurrently. Finished episodes are scored in the sandbox and appended
to a checkpoint file in batches; a run killed at any point and restarted with the same checkpoint
reuses every episode it saved and ends with exactly one trajectory per (task, sample).
"""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import polars as pl
from tqdm import tqdm

from sweetflow.agents import Agent, make_agent
from sweetflow.artifacts import checkpoint_path, stage_output
from sweetflow.errors import InputError, StageFailed
from sweetflow.dialogue import AGENT, HUMAN, AgentTurn, EpisodeView, Message, final_answer
from sweetflow.params import AgentParams, EpisodeParams, Params
from sweetflow.sandbox import Sandbox
from sweetflow.scoring import score_answers
from sweetflow.simulators import Human, make_human
from sweetflow.tasks.table import read_tasks

TURN = pl.Struct(
    {
        "role": pl.String,
        "content": pl.String,
        "prompt": pl.String,  # agent turns: the exact model input
        "raw": pl.String,  # agent turns: the raw model output
        "logprob_sum": pl.Float64,
        "logprob_mean": pl.Float64,
        "n_tokens": pl.Int64,
    }
)
TRAJECTORY_SCHEMA = pl.Schema(
    {
        "task_id": pl.String,
        "sample": pl.Int32,
        "seed": pl.Int64,
        "dialogue": pl.List(TURN),
        "answer": pl.String,
        "answered": pl.Boolean,  # the agent used the answer marker (protocol followed)
        "n_turns": pl.Int32,  # agent turns
        "reward": pl.Float64,  # fraction of tests passed
        "success": pl.Boolean,
        "sandbox_status": pl.String,
        "failure": pl.String,  # why the episode could not be completed, or null
    }
)


def episode_seed(seed: int, task_id: str, sample: int) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed}:{task_id}:{sample}".encode()).digest()[:6], "big")


@dataclass
class Episode:
    task: dict
    sample: int
    seed: int
    messages: list[Message] = field(default_factory=list)
    turns: list[AgentTurn] = field(default_factory=list)
    answer: str | None = None
    answered: bool = False
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
            topics=list(self.task.get("facts") or []),
            template=self.task.get("template") or "",
        )

    def dialogue(self) -> list[dict]:
        rows, agent_turns = [], iter(self.turns)
        for m in self.messages:
            row = {"role": m.role, "content": m.content}
            if m.role == AGENT:
                row.update({k: v for k, v in asdict(next(agent_turns)).items() if k != "message"})
            rows.append(row)
        return rows


class Checkpoint:
    """Finished episodes, one JSON line each, appended and fsynced batch by batch."""

    def __init__(self, path: Path):
        self.path = Path(path)

    def load(self) -> dict[tuple[str, int], dict]:
        done: dict[tuple[str, int], dict] = {}
        if not self.path.exists():
            return done
        for line in self.path.read_text().splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line torn by a kill mid-write; that episode is simply run again
            if record.get("failure") is None:  # failed episodes are retried on resume
                done[(record["task_id"], record["sample"])] = record
        return done

    def append(self, records: list[dict]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a") as fh:
            fh.write("".join(json.dumps(r) + "\n" for r in records))
            fh.flush()
            os.fsync(fh.fileno())


def run_episodes(
    tasks: list[dict],
    samples_per_task: int,
    agent: Agent,
    human: Human,
    sandbox: Sandbox,
    params: EpisodeParams,
    seed: int,
    checkpoint: Checkpoint,
    human_concurrency: int = 1,
    desc: str = "episodes",
) -> list[dict]:
    """Run (or finish) every (task, sample) episode; return their records in task, sample order."""
    done = checkpoint.load()
    todo = [
        Episode(task, s, episode_seed(seed, task["task_id"], s))
        for task in tasks
        for s in range(samples_per_task)
        if (task["task_id"], s) not in done
    ]
    total = len(tasks) * samples_per_task
    if done:
        print(f"{desc}: resuming: {len(done)} of {total} episodes already done", file=sys.stderr)
    bar = tqdm(total=total, initial=len(done), desc=desc, unit="episode")
    live, finished = todo, []
    with ThreadPoolExecutor(human_concurrency) as pool:
        while live:
            for ep, turn in zip(live, agent.act([ep.view() for ep in live])):
                if isinstance(turn, Exception):
                    ep.failure = f"agent: {turn}"[:500]
                    continue
                ep.turns.append(turn)
                ep.messages.append(Message(AGENT, turn.message))
                answer = final_answer(turn.message)
                if answer is not None:
                    ep.answer, ep.answered = answer, True
                elif len(ep.turns) >= params.max_turns:
                    ep.answer = turn.message
            waiting = [ep for ep in live if not ep.over]
            replies = pool.map(lambda ep: _reply(human, ep), waiting)
            for ep, reply in zip(waiting, replies):
                if isinstance(reply, Exception):
                    ep.failure = f"simulator: {reply}"[:500]
                else:
                    ep.messages.append(Message(HUMAN, reply))
            finished += [ep for ep in live if ep.over]
            live = [ep for ep in live if not ep.over]
            if len(finished) >= params.flush_every or (not live and finished):
                records = _score(finished, sandbox)
                checkpoint.append(records)
                done.update({(r["task_id"], r["sample"]): r for r in records})
                bar.update(len(records))
                finished = []
    bar.close()
    return [done[(t["task_id"], s)] for t in tasks for s in range(samples_per_task)]


def _reply(human: Human, ep: Episode) -> str | Exception:
    try:
        return human.reply(ep.task, ep.messages)
    except Exception as e:  # noqa: BLE001 - any simulator fault fails this episode only, with its reason
        return e


def _score(episodes: list[Episode], sandbox: Sandbox) -> list[dict]:
    answered = [ep for ep in episodes if ep.failure is None]
    scores = score_answers(
        [ep.answer for ep in answered],
        [list(ep.task["expected"]) for ep in answered],
        [list(ep.task["test_cases"]) for ep in answered],
        sandbox,
    )
    by_key = {ep.key: s for ep, s in zip(answered, scores)}
    return [_record(ep, by_key.get(ep.key)) for ep in episodes]


def _record(ep: Episode, score) -> dict:
    return {
        "task_id": ep.task["task_id"],
        "sample": ep.sample,
        "seed": ep.seed,
        "dialogue": ep.dialogue(),
        "answer": ep.answer or "",
        "answered": ep.answered,
        "n_turns": len(ep.turns),
        "reward": score.tests_passed if score else 0.0,
        "success": bool(score and score.success),
        "sandbox_status": score.status if score else None,
        "failure": ep.failure,
    }


def to_frame(records: list[dict]) -> pl.DataFrame:
    return pl.DataFrame(records, schema=TRAJECTORY_SCHEMA, orient="row")


def summarize_episodes(frame: pl.DataFrame) -> dict:
    """Backend metrics of a set of trajectories."""
    n = frame.height
    return {
        "tests_passed": float(frame["reward"].mean()) if n else 0.0,
        "success_rate": float(frame["success"].mean()) if n else 0.0,
        "count": n,
        "mean_turns": float(frame["n_turns"].mean()) if n else 0.0,
        "protocol_followed": float(frame["answered"].mean()) if n else 0.0,
        "failures": int(frame["failure"].is_not_null().sum()),
    }


class TooManyFailures(StageFailed):
    pass


def collect(
    tasks: list[dict], agent: Agent, params: Params, samples_per_task: int, seed: int, checkpoint: Path, desc: str
) -> pl.DataFrame:
    """Run the episodes of a stage with the simulator and sandbox its params name; fail loudly when
    more episodes failed than `episodes.max_failure_share` allows (the checkpoint keeps the rest)."""
    human = make_human(params.simulator)
    endpoint = params.simulator.endpoint
    with Sandbox(params.sandbox) as sandbox:
        records = run_episodes(
            tasks, samples_per_task, agent, human, sandbox, params.episodes, seed, Checkpoint(checkpoint),
            human_concurrency=endpoint.concurrency if endpoint else 1, desc=desc,
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


def episode_stage(
    params: Params, stage: str, section: str, agent: AgentParams, agent_section: str | None, tasks: str, out_dir: str,
    metrics: str,
) -> dict:
    """The body of every stage that runs episodes (`demos`, `rollout`, `evaluate@*`, `evaluate_model@*`):
    `agent` on the tasks in `tasks`, with `samples_per_task` and `seed` from params section `section`;
    trajectories to `out_dir`, metrics to `metrics`. Resumable.

    `agent_section` names where the agent's params live (e.g. "agents.expert"), for the manifest;
    None when `section` holds them already. A checkpoint the agent reads is an input, hashed and
    traced like any other."""
    p = getattr(params, section)
    sections = {section: p, "simulator": params.simulator, "episodes": params.episodes, "sandbox": params.sandbox}
    if agent_section:
        sections[agent_section] = agent
    inputs = [tasks] + ([agent.checkpoint] if agent.checkpoint else [])
    checkpoint = checkpoint_path(stage, sections, inputs)
    with stage_output(out_dir, stage, sections, inputs, p.seed, metrics) as out:
        frame = collect(
            read_tasks(tasks).to_dicts(), make_agent(agent), params, p.samples_per_task, p.seed, checkpoint, stage
        )
        frame.write_parquet(out.dir / "trajectories.parquet")
        out.metrics.update(summarize_episodes(frame))
    checkpoint.unlink(missing_ok=True)
    return out.metrics


def checkpoint_for_seed(directory: Path | str, seed: int) -> Path:
    """The checkpoint a method evaluates for `seed`: `directory` itself when it is one (the base
    policy: every seed samples from it), else its per-seed checkpoint `seed<k>/` (a trained policy)."""
    directory = Path(directory)
    if (directory / "config.json").is_file():
        return directory
    per_seed = directory / f"seed{seed}"
    if (per_seed / "config.json").is_file():
        return per_seed
    raise InputError(f"{directory}: neither a checkpoint nor a directory with a checkpoint {per_seed.name}/")


def over_seeds(per_seed: dict[int, dict]) -> dict:
    """One method's metrics over its seeds: each metric's mean, the sample standard deviation of
    tests_passed and success_rate (0 for one seed), counts summed, and every seed's own metrics."""
    runs = list(per_seed.values())
    out = {}
    for key in runs[0]:
        values = [run[key] for run in runs]
        out[key] = sum(values) if key in ("count", "failures") else sum(values) / len(values)
    for key in ("tests_passed", "success_rate"):
        out[f"{key}_std"] = statistics.stdev(run[key] for run in runs) if len(runs) > 1 else 0.0
    out["seeds"] = {str(seed): run for seed, run in per_seed.items()}
    return out


def checkpoint_evaluation_stage(params: Params, method: str) -> dict:
    """Stage `evaluate_model@<method>`: the checkpoint(s) `evaluate.models[method]` on the test
    tasks, once per seed of `seeds` (episode seed = evaluate.seed + seed), generating as
    `evaluate.policy` says. Writes `data/evaluations/<method>/trajectories-seed<k>.parquet` and
    `reports/backend/<method>/metrics.json` (`over_seeds`). Each seed resumes on its own."""
    p, tasks = params.evaluate, "data/tasks/test.parquet"
    directory = p.models[method]
    stage = f"evaluate_model@{method}"
    sections = {
        "evaluate.policy": p.policy, "evaluate.samples_per_task": p.samples_per_task, "evaluate.seed": p.seed,
        "seeds": params.seeds, "simulator": params.simulator, "episodes": params.episodes, "sandbox": params.sandbox,
    }  # fmt: skip
    checkpoints = {seed: checkpoint_for_seed(directory, seed) for seed in params.seeds}
    inputs = [tasks, *dict.fromkeys(checkpoints.values())]
    task_rows = read_tasks(tasks).to_dicts()
    per_seed = {}
    with stage_output(f"data/evaluations/{method}", stage, sections, inputs, p.seed,
                      f"reports/backend/{method}/metrics.json") as out:  # fmt: skip
        for seed, checkpoint in checkpoints.items():
            agent = make_agent(p.policy.model_copy(update={"checkpoint": str(checkpoint)}))
            progress = checkpoint_path(f"{stage}-seed{seed}", sections, [tasks, checkpoint])
            frame = collect(task_rows, agent, params, p.samples_per_task, p.seed + seed, progress, f"{stage} seed {seed}")
            frame.write_parquet(out.dir / f"trajectories-seed{seed}.parquet")
            per_seed[seed] = summarize_episodes(frame)
        out.metrics.update(over_seeds(per_seed))
    for seed, checkpoint in checkpoints.items():
        checkpoint_path(f"{stage}-seed{seed}", sections, [tasks, checkpoint]).unlink(missing_ok=True)
    return out.metrics
