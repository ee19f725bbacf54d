"""The bodies of the stages that run episodes: `demos`, `rollout` and `evaluate` (an agent's
episodes, once), `evaluate_base` and `evaluate_policy` (a checkpoint's episodes, once per seed)."""

from __future__ import annotations

import json
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

from stages._common import Stage, with_checkpoint
from sweetflow.agents.model import served_records
from sweetflow.core.artifacts import checkpoint_path
from sweetflow.core.errors import InputError
from sweetflow.core.params import ModelAgentParams
from sweetflow.core.tables import SEED_TRAJECTORIES, TRAJECTORIES, read_tasks, task_file
from sweetflow.domain import get_domain
from sweetflow.params import Params
from sweetflow.rollout.engine import collect
from sweetflow.rollout.metrics import over_seeds, summarize_episodes


def episode_stage(stage: Stage, section: str, split: str) -> dict:
    """The body of every stage that runs an agent's episodes, once, on the `split` tasks of its
    domain, with `samples_per_task` and `seed` from params section `section`:
    - `demos@<domain>`, `rollout@<domain>`: the agent that section names, to `data/<domain>/<section>`;
    - `evaluate@<domain>-<agent>`: the stage's agent, to `data/<domain>/evaluations/<agent>`.
    Resumable. A checkpoint the agent reads is an input, hashed and traced like any other; a `served`
    agent's server runs for the length of the episodes, and the manifest records what it served."""
    params, domain = stage.params, stage.domain
    p = getattr(params, section)
    name = stage.item or p.agent  # `evaluate@<domain>-<agent>`'s agent, or the one the section names
    agent = with_checkpoint(params.agents[name], stage)
    tasks = stage.upstream("tasks", file=task_file(split))
    inputs = [tasks] + ([agent.checkpoint] if agent.checkpoint else [])
    checkpoint = checkpoint_path(stage.name, stage.sections, inputs)
    task_rows = read_tasks(domain, split)[: getattr(p, "max_tasks", None)]
    with stage.output(inputs, p.seed) as out:
        with get_domain(domain).open_agent(agent) as model:
            frame = collect(task_rows, model, params, domain, p.samples_per_task, p.seed, checkpoint, stage.name)
        frame.write_parquet(out.dir / TRAJECTORIES)
        out.served.update(served_records({f"agents.{name}": agent}, out.inputs))
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


def checkpoint_evaluation_stage(stage: Stage, directory: str, split: str = "test") -> dict:
    """Stages `evaluate_base@<domain>` (method `zero_shot`, the base model),
    `evaluate_policy@<domain>-<name>` and, on the validation tasks, `validate@<domain>-<name>`: the
    checkpoint(s) in `directory` on the `split` tasks, once per seed of `seeds` (episode seed =
    evaluate.seed + seed), generating as `evaluate.policy` says. Writes the stage's output
    (`data/<domain>/evaluations/<method>/` or `data/<domain>/validation/<method>/`), one
    `trajectories-seed<k>.parquet` per seed, and the method's metrics (`over_seeds`). Seeds run
    `evaluate.processes` at a time (0: all at once); each resumes on its own. With `served`, each seed
    starts a server for its own checkpoint, and the manifest records what each served (`served.seed<k>`)."""
    params, domain = stage.params, stage.domain
    p = params.evaluate
    if p.policy.backend == "openai":
        raise InputError(
            f"params.yaml: evaluate.policy.backend: 'openai' sends every seed's episodes to one endpoint, which serves "
            f"none of the checkpoints {stage.name} evaluates ({directory}); use 'served' (a server started for each "
            "checkpoint) or 'transformers'"
        )
    tasks = stage.upstream("tasks", file=task_file(split))
    checkpoints = {seed: checkpoint_for_seed(directory, seed) for seed in params.seeds}
    inputs = [tasks, *dict.fromkeys(checkpoints.values())]
    task_rows = read_tasks(domain, split)
    progress = seed_progress(stage.name, stage.sections, tasks, checkpoints)
    policies = {seed: p.policy.model_copy(update={"checkpoint": str(c)}) for seed, c in checkpoints.items()}
    with stage.output(inputs, p.seed) as out:
        jobs = {
            seed: (
                params,
                domain,
                task_rows,
                policies[seed],
                seed,
                progress[seed],
                out.dir / SEED_TRAJECTORIES.format(seed=seed),
                f"{stage.name} seed {seed}",
            )
            for seed in checkpoints
        }
        workers = min(p.processes or len(jobs), len(jobs))
        if workers == 1:  # no process to start (a second torch import costs seconds)
            per_seed = {seed: _evaluate_seed(*args) for seed, args in jobs.items()}
        else:  # seeds are independent runs: on a CPU they go `evaluate.processes` at a time, one per process
            # Forked from a server that imported torch and transformers once, not spawned to import
            # them again each (~3.5 s of CPU a process). The server runs no torch op before it forks,
            # so no thread pool is inherited half-initialised (the reason not to fork a torch process).
            context = get_context("forkserver")
            context.set_forkserver_preload(["sweetflow.agents.transformers", *model_modules(checkpoints.values())])
            with ProcessPoolExecutor(workers, mp_context=context) as pool:
                running = {seed: pool.submit(_evaluate_seed, *args) for seed, args in jobs.items()}
                per_seed = {seed: job.result() for seed, job in running.items()}
        out.metrics.update(over_seeds(per_seed, domain))
        out.served.update(served_records({f"seed{seed}": policy for seed, policy in policies.items()}, out.inputs))
    for path in progress.values():
        path.unlink(missing_ok=True)
    return out.metrics


def seed_progress(stage: str, sections: dict, tasks: str, checkpoints: dict[int, Path]) -> dict[int, Path]:
    """Where each seed's evaluation keeps its finished episodes (`checkpoint_path`), named by what decides them:
    not `evaluate.processes`, how many seeds run at once, so a rerun with another count resumes them too."""
    sections = {key: value for key, value in sections.items() if key != "evaluate.processes"}
    return {seed: checkpoint_path(f"{stage}-seed{seed}", sections, [tasks, c]) for seed, c in checkpoints.items()}


def model_modules(checkpoints) -> list[str]:
    """The transformers modules of the checkpoints' model types (`transformers.models.llama.modeling_llama`),
    which transformers imports lazily at the first load: imported once by the forkserver, not by each
    seed's process (~1.5 s of CPU each for Llama's). A name without a module is skipped by the forkserver."""
    types = {json.loads((Path(c) / "config.json").read_text()).get("model_type", "") for c in checkpoints}
    return [
        f"transformers.models.{t}.{kind}_{t}"
        for t in sorted(t.replace("-", "_") for t in types if t)
        for kind in ("configuration", "modeling")
    ]


def _evaluate_seed(
    params: Params,
    domain: str,
    tasks: list[dict],
    policy: ModelAgentParams,
    seed: int,
    progress: Path,
    out: Path,
    desc: str,
) -> dict:
    with get_domain(domain).open_agent(policy) as agent:
        frame = collect(
            tasks, agent, params, domain, params.evaluate.samples_per_task, params.evaluate.seed + seed, progress, desc
        )
    frame.write_parquet(out)
    return summarize_episodes(frame, domain, tasks)
