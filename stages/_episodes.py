"""The bodies of the stages that run episodes: `demos`, `rollout` and `evaluate` (an agent's
episodes, once), `evaluate_base`, `evaluate_policy` and `validate` (a checkpoint's episodes, once per
seed: sweetflow/rollout/seeds.py)."""

from __future__ import annotations

from sweetflow.agents.model import served_records
from sweetflow.core.artifacts import checkpoint_path
from sweetflow.core.errors import InputError
from sweetflow.core.tables import SEED_TRAJECTORIES, TRAJECTORIES, read_tasks, task_file
from sweetflow.domain import get_domain
from sweetflow.rollout.engine import collect
from sweetflow.rollout.metrics import over_seeds, summarize_episodes
from sweetflow.rollout.seeds import checkpoint_for_seed, run_seeds, seed_progress
from sweetflow.stage import Stage, with_checkpoint


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
        where = {
            s: (progress[s], out.dir / SEED_TRAJECTORIES.format(seed=s), f"{stage.name} seed {s}") for s in policies
        }
        per_seed = run_seeds(params, domain, task_rows, policies, where)
        out.metrics.update(over_seeds(per_seed, domain))
        out.served.update(served_records({f"seed{seed}": policy for seed, policy in policies.items()}, out.inputs))
    for path in progress.values():
        path.unlink(missing_ok=True)
    return out.metrics
