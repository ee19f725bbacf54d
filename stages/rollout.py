"""Stage `rollout`: offline trajectories on the training tasks (SWEET-RL step 1).

Reads params `rollout`, `agents.<rollout.agent>`, `simulator`, `episodes`, `sandbox`; writes
`data/rollouts/` with `trajectories.parquet` (one row per (task, sample), the dialogue nested, the
reward) and `manifest.json`, and `reports/rollouts/metrics.json`. Resumable: finished episodes are kept in
`.sweetflow/checkpoints/` until the output is complete.
"""

from __future__ import annotations

import json

from sweetflow.agents import make_agent
from sweetflow.artifacts import checkpoint_path, stage_output
from sweetflow.errors import run_stage
from sweetflow.params import load_params
from sweetflow.rollout import collect, summarize_episodes
from sweetflow.tasks.table import read_tasks

TASKS = "data/tasks/train.parquet"
OUT = "data/rollouts"
METRICS = "reports/rollouts/metrics.json"


def main() -> None:
    params = load_params()
    p = params.rollout
    agent_params = params.agents[p.agent]
    sections = {
        "rollout": p,
        f"agents.{p.agent}": agent_params,
        "simulator": params.simulator,
        "episodes": params.episodes,
        "sandbox": params.sandbox,
    }
    tasks = read_tasks(TASKS).to_dicts()
    checkpoint = checkpoint_path("rollout", sections, [TASKS])
    with stage_output(OUT, "rollout", sections, [TASKS], p.seed, METRICS) as out:
        frame = collect(tasks, make_agent(agent_params), params, p.samples_per_task, p.seed, checkpoint, "rollout")
        frame.write_parquet(out.dir / "trajectories.parquet")
        out.metrics.update(summarize_episodes(frame))
    checkpoint.unlink(missing_ok=True)
    print(json.dumps(out.metrics, indent=2))


if __name__ == "__main__":
    run_stage(main)
