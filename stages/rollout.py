"""Stages `demos` and `rollout`: trajectories on the training tasks.

`python -m stages.rollout SECTION` runs the agent that params section SECTION names on every
training task, `samples_per_task` times:
- `demos`: scripted demonstrations that warm-start the base policy (stage `base_model`);
- `rollout`: the offline data of SWEET-RL step 1, from the base policy.

Reads params `SECTION`, `agents.<SECTION.agent>`, `simulator`, `episodes`, `sandbox`; writes
`data/SECTION/` (`trajectories.parquet`: one row per (task, sample), the dialogue nested, the reward;
`manifest.json`) and `reports/SECTION/metrics.json`. Resumable: finished episodes are kept in
`.sweetflow/checkpoints/` until the output is complete.
"""

from __future__ import annotations

import json
import sys

from sweetflow.agents import make_agent
from sweetflow.artifacts import checkpoint_path, stage_output
from sweetflow.errors import InputError, run_stage
from sweetflow.params import load_params
from sweetflow.rollout import collect, summarize_episodes
from sweetflow.tasks.table import read_tasks

TASKS = "data/tasks/train.parquet"
SECTIONS = ("demos", "rollout")


def main() -> None:
    if len(sys.argv) != 2 or sys.argv[1] not in SECTIONS:
        raise InputError(f"usage: python -m stages.rollout {{{','.join(SECTIONS)}}}")
    name = sys.argv[1]
    params = load_params()
    p = getattr(params, name)
    agent_params = params.agents[p.agent]
    sections = {
        name: p,
        f"agents.{p.agent}": agent_params,
        "simulator": params.simulator,
        "episodes": params.episodes,
        "sandbox": params.sandbox,
    }
    tasks = read_tasks(TASKS).to_dicts()
    checkpoint = checkpoint_path(name, sections, [TASKS])
    with stage_output(f"data/{name}", name, sections, [TASKS], p.seed, f"reports/{name}/metrics.json") as out:
        frame = collect(tasks, make_agent(agent_params), params, p.samples_per_task, p.seed, checkpoint, name)
        frame.write_parquet(out.dir / "trajectories.parquet")
        out.metrics.update(summarize_episodes(frame))
    checkpoint.unlink(missing_ok=True)
    print(json.dumps(out.metrics, indent=2))


if __name__ == "__main__":
    run_stage(main)
