"""A checkpoint's episodes once per seed (stages `evaluate_base`, `evaluate_policy`, `validate`): each
seed's checkpoint, where each seed keeps its finished episodes, and the seeds run `evaluate.processes`
at a time, each in a process of its own."""

from __future__ import annotations

import json
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

from sweetflow.core.artifacts import checkpoint_path
from sweetflow.core.errors import InputError
from sweetflow.core.params import ModelAgentParams
from sweetflow.domain import get_domain
from sweetflow.params import Params
from sweetflow.rollout.engine import collect
from sweetflow.rollout.metrics import summarize_episodes


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


def run_seeds(
    params: Params, domain: str, tasks: list[dict], policies: dict[int, ModelAgentParams], where: dict[int, tuple]
) -> dict[int, dict]:
    """Each seed's episodes of `policies[seed]` on `tasks` (episode seed = evaluate.seed + seed), `where[seed]`
    (where its finished episodes are kept, its trajectories' file, its progress bar's name) saying where they go;
    each seed's metrics (`summarize_episodes`)."""
    jobs = {seed: (params, domain, tasks, policy, seed, *where[seed]) for seed, policy in policies.items()}
    workers = min(params.evaluate.processes or len(jobs), len(jobs))
    if workers == 1:  # no process to start (a second torch import costs seconds)
        return {seed: _evaluate_seed(*args) for seed, args in jobs.items()}
    # Seeds are independent runs: on a CPU they go `evaluate.processes` at a time, one per process,
    # forked from a server that imported torch and transformers once, not spawned to import them again
    # each (~3.5 s of CPU a process). The server runs no torch op before it forks, so no thread pool is
    # inherited half-initialised (the reason not to fork a torch process).
    context = get_context("forkserver")
    checkpoints = [policy.checkpoint for policy in policies.values()]
    context.set_forkserver_preload(["sweetflow.agents.transformers", *model_modules(checkpoints)])
    with ProcessPoolExecutor(workers, mp_context=context) as pool:
        running = {seed: pool.submit(_evaluate_seed, *args) for seed, args in jobs.items()}
        return {seed: job.result() for seed, job in running.items()}


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
