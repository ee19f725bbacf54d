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
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from multiprocessing import get_context
from pathlib import Path

import polars as pl
from tqdm import tqdm

from sweetflow import paths
from sweetflow.agents import Agent
from sweetflow.artifacts import checkpoint_path, stage_output
from sweetflow.dialogue import AGENT, HUMAN, AgentTurn, ContextOverflow, EpisodeView, Message, final_answer
from sweetflow.domains import DomainRuntime, make_agent, open_domain, read_domain_tasks
from sweetflow.errors import InputError, StageFailed
from sweetflow.params import AgentParams, EpisodeParams, Params

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
        "ended_by": pl.String,  # "answer", "max_turns", "context" (the dialogue filled the model's context); null if failed
        "n_turns": pl.Int32,  # agent turns
        "reward": pl.Float64,  # backend: fraction of tests passed; frontend: similarity to the target
        "success": pl.Boolean,  # backend: every test passed; frontend: null
        "score_status": pl.String,  # backend: the sandbox's status; frontend: rendered, no_html or render_failed
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
    domain: str = "backend"
    view_fields: dict = field(default_factory=dict)  # what scripted agents may read (DomainRuntime.view_fields)
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
        Episode(task, s, episode_seed(seed, task["task_id"], s), runtime.name, runtime.view_fields(task))
        for task in tasks
        for s in range(samples_per_task)
        if (task["task_id"], s) not in done
    ]
    total = len(tasks) * samples_per_task
    if done:
        print(f"{desc}: resuming: {len(done)} of {total} episodes already done", file=sys.stderr)
    bar = tqdm(total=total, initial=len(done), desc=desc, unit="episode")
    live, finished = todo, []
    with ThreadPoolExecutor(runtime.human_concurrency) as pool:
        while live:
            for ep, turn in zip(live, agent.act([ep.view() for ep in live])):
                if isinstance(turn, ContextOverflow):
                    ep.answer, ep.ended_by = (ep.turns[-1].message if ep.turns else ""), "context"
                    continue
                if isinstance(turn, Exception):
                    ep.failure = f"agent: {turn}"[:500]
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
                    ep.failure = f"simulator: {reply}"[:500]
                else:
                    ep.messages.append(Message(HUMAN, reply))
            finished += [ep for ep in live if ep.over]
            live = [ep for ep in live if not ep.over]
            if len(finished) >= params.flush_every or (not live and finished):
                records = _score(finished, runtime)
                checkpoint.append(records)
                done.update({(r["task_id"], r["sample"]): r for r in records})
                bar.update(len(records))
                finished = []
    bar.close()
    return [done[(t["task_id"], s)] for t in tasks for s in range(samples_per_task)]


def _reply(human, ep: Episode) -> str | Exception:
    try:
        return human.reply(ep.task, ep.messages)
    except Exception as e:  # noqa: BLE001 - any simulator fault fails this episode only, with its reason
        return e


def _score(episodes: list[Episode], runtime: DomainRuntime) -> list[dict]:
    answered = [ep for ep in episodes if ep.failure is None]
    scores = runtime.score([ep.task for ep in answered], [ep.answer for ep in answered])
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
        "ended_by": ep.ended_by if ep.failure is None else None,
        "n_turns": len(ep.turns),
        "reward": score.reward if score else 0.0,
        "success": score.success if score else (False if ep.domain == "backend" else None),
        "score_status": score.status if score else None,
        "failure": ep.failure,
    }


def to_frame(records: list[dict]) -> pl.DataFrame:
    return pl.DataFrame(records, schema=TRAJECTORY_SCHEMA, orient="row")


def summarize_episodes(frame: pl.DataFrame, domain: str, tasks: list[dict]) -> dict:
    """A method's metrics on a set of trajectories. Backend: `tests_passed` and `success_rate`;
    frontend: `similarity` and `win_rate` (against each task's reference page, the one made from the
    description alone: `reference_similarity` in the task table; a tie is half a win)."""
    n = frame.height
    metrics: dict = {}
    if domain == "backend":
        metrics["tests_passed"] = float(frame["reward"].mean()) if n else 0.0
        metrics["success_rate"] = float(frame["success"].mean()) if n else 0.0
    else:
        from sweetflow.frontend.similarity import win_rate

        reference = {t["task_id"]: t["reference_similarity"] for t in tasks}
        metrics["similarity"] = float(frame["reward"].mean()) if n else 0.0
        metrics["win_rate"] = win_rate(frame["reward"].to_list(), [reference[t] for t in frame["task_id"]]) if n else 0.0
    return {
        **metrics,
        "count": n,
        "mean_turns": float(frame["n_turns"].mean()) if n else 0.0,
        "protocol_followed": float(frame["answered"].mean()) if n else 0.0,
        "context_full": int((frame["ended_by"] == "context").sum()),
        "failures": int(frame["failure"].is_not_null().sum()),
    }


# The metrics whose spread over seeds a report shows, by domain.
HEADLINE = {"backend": ("tests_passed", "success_rate"), "frontend": ("similarity", "win_rate")}


class TooManyFailures(StageFailed):
    pass


def collect(
    tasks: list[dict], agent: Agent, params: Params, domain: str, samples_per_task: int, seed: int, checkpoint: Path,
    desc: str,
) -> pl.DataFrame:
    """Run the episodes of a stage in `domain`, with the simulator and scoring its params name; fail
    loudly when more episodes failed than `episodes.max_failure_share` allows (the checkpoint keeps
    the rest)."""
    with open_domain(params, domain) as runtime:
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


def episode_sections(params: Params, domain: str) -> dict:
    """The params sections every episode stage of `domain` reads (its dvc.yaml `params` list)."""
    d = params.domain(domain)
    return {f"{domain}.simulator": d.simulator, f"{domain}.scoring": d.scoring, "episodes": params.episodes}


def with_checkpoint(agent: AgentParams, domain: str) -> AgentParams:
    """A model agent without a checkpoint samples from the domain's base model."""
    if agent.backend == "transformers" and not agent.checkpoint:
        return agent.model_copy(update={"checkpoint": paths.base_model(domain)})
    return agent


def episode_stage(
    params: Params, domain: str, stage: str, section: str, agent: AgentParams, agent_section: str | None, split: str,
    out_dir: str, metrics: str,
) -> dict:
    """The body of every stage that runs an agent's episodes (`demos`, `rollout`, `evaluate`): `agent`
    on the `split` tasks of `domain`, with `samples_per_task` and `seed` from params section
    `section`; trajectories to `out_dir`, metrics to `metrics`. Resumable.

    `agent_section` names where the agent's params live (e.g. "agents.expert"), for the manifest;
    None when `section` holds them already. A checkpoint the agent reads is an input, hashed and
    traced like any other."""
    p = getattr(params, section)
    agent = with_checkpoint(agent, domain)
    sections = {section: p, **episode_sections(params, domain)}
    if agent_section:
        sections[agent_section] = agent
    tasks = paths.task_table(domain, split)
    inputs = [tasks] + ([agent.checkpoint] if agent.checkpoint else [])
    checkpoint = checkpoint_path(stage, sections, inputs)
    task_rows = read_domain_tasks(domain, split)[: getattr(p, "max_tasks", None)]
    with stage_output(out_dir, stage, sections, inputs, p.seed, metrics) as out:
        frame = collect(
            task_rows, make_agent(agent, domain), params, domain, p.samples_per_task, p.seed, checkpoint, stage
        )
        frame.write_parquet(out.dir / "trajectories.parquet")
        out.metrics.update(summarize_episodes(frame, domain, task_rows))
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


def over_seeds(per_seed: dict[int, dict], domain: str) -> dict:
    """One method's metrics over its seeds: each metric's mean, the sample standard deviation of the
    domain's headline metrics (0 for one seed), counts summed, and every seed's own metrics."""
    runs = list(per_seed.values())
    out = {}
    for key in runs[0]:
        values = [run[key] for run in runs]
        out[key] = sum(values) if key in ("count", "failures", "context_full") else sum(values) / len(values)
    for key in HEADLINE[domain]:
        out[f"{key}_std"] = statistics.stdev(run[key] for run in runs) if len(runs) > 1 else 0.0
    out["seeds"] = {str(seed): run for seed, run in per_seed.items()}
    return out


def checkpoint_evaluation_stage(params: Params, domain: str, method: str, directory: str, stage: str) -> dict:
    """Stages `evaluate_base@<domain>` (method `zero_shot`, the base model) and
    `evaluate_policy@<domain>-<name>`: the checkpoint(s) in `directory` on the test tasks, once per
    seed of `seeds` (episode seed = evaluate.seed + seed), generating as `evaluate.policy` says.
    Writes `data/<domain>/evaluations/<method>/trajectories-seed<k>.parquet` and the method's metrics
    (`over_seeds`). Seeds run `evaluate.processes` at a time (0: all at once); each resumes on its own."""
    p = params.evaluate
    sections = {
        "evaluate.policy": p.policy, "evaluate.samples_per_task": p.samples_per_task, "evaluate.seed": p.seed,
        "seeds": params.seeds, **episode_sections(params, domain),
    }  # fmt: skip
    tasks = paths.task_table(domain, "test")
    checkpoints = {seed: checkpoint_for_seed(directory, seed) for seed in params.seeds}
    inputs = [tasks, *dict.fromkeys(checkpoints.values())]
    task_rows = read_domain_tasks(domain, "test")
    progress = {seed: checkpoint_path(f"{stage}-seed{seed}", sections, [tasks, c]) for seed, c in checkpoints.items()}
    with stage_output(paths.evaluation(domain, method), stage, sections, inputs, p.seed,
                      paths.method_metrics(domain, method)) as out:  # fmt: skip
        jobs = {
            seed: (params, domain, task_rows, p.policy.model_copy(update={"checkpoint": str(c)}), seed, progress[seed],
                   out.dir / f"trajectories-seed{seed}.parquet", f"{stage} seed {seed}")
            for seed, c in checkpoints.items()
        }  # fmt: skip
        workers = min(p.processes or len(jobs), len(jobs))
        if workers == 1:  # no process to start (a second torch import costs seconds)
            per_seed = {seed: _evaluate_seed(*args) for seed, args in jobs.items()}
        else:  # seeds are independent runs: on a CPU they go `evaluate.processes` at a time, one per process
            # Forked from a server that imported torch and transformers once, not spawned to import
            # them again each (~3.5 s of CPU a process). The server runs no torch op before it forks,
            # so no thread pool is inherited half-initialised (the reason not to fork a torch process).
            context = get_context("forkserver")
            context.set_forkserver_preload(["sweetflow.models.policy"])
            with ProcessPoolExecutor(workers, mp_context=context) as pool:
                running = {seed: pool.submit(_evaluate_seed, *args) for seed, args in jobs.items()}
                per_seed = {seed: job.result() for seed, job in running.items()}
        out.metrics.update(over_seeds(per_seed, domain))
    for path in progress.values():
        path.unlink(missing_ok=True)
    return out.metrics


def _evaluate_seed(
    params: Params, domain: str, tasks: list[dict], policy: AgentParams, seed: int, progress: Path, out: Path, desc: str
) -> dict:
    frame = collect(tasks, make_agent(policy, domain), params, domain, params.evaluate.samples_per_task,
                    params.evaluate.seed + seed, progress, desc)  # fmt: skip
    frame.write_parquet(out)
    return summarize_episodes(frame, domain, tasks)
