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

from sweetflow.errors import InputError, run_stage
from sweetflow.params import load_params
from sweetflow.rollout import episode_stage

SECTIONS = ("demos", "rollout")


def main() -> None:
    if len(sys.argv) != 2 or sys.argv[1] not in SECTIONS:
        raise InputError(f"usage: python -m stages.rollout {{{','.join(SECTIONS)}}}")
    name = sys.argv[1]
    params = load_params()
    agent = getattr(params, name).agent
    metrics = episode_stage(
        params, name, name, params.agents[agent], f"agents.{agent}", "data/tasks/train.parquet", f"data/{name}",
        f"reports/{name}/metrics.json",
    )
    print(json.dumps(metrics, indent=2))


if __name__ == "__main__":
    run_stage(main)
