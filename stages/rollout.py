"""Stage `rollout@<domain>`: the offline data of SWEET-RL step 1, the base policy's own trajectories
on a domain's training tasks.

`python -m stages.rollout DOMAIN` runs the agent `rollout.agent` names (a model agent without a
checkpoint samples from `models/DOMAIN/base`) on the first `rollout.max_tasks` training tasks,
`rollout.samples_per_task` times each. Reads params `rollout`, `agents.<rollout.agent>`,
`DOMAIN.simulator`, `DOMAIN.scoring`, `episodes`; writes `data/DOMAIN/rollout/`
(`trajectories.parquet`, `manifest.json`) and `reports/DOMAIN/stages/rollout/metrics.json`.
Resumable.
"""

from __future__ import annotations

import json

from stages._common import begin
from stages._episodes import episode_stage
from sweetflow.errors import run_stage


def main() -> None:
    stage = begin("rollout", __doc__)
    print(json.dumps(episode_stage(stage, "rollout", "train"), indent=2))


if __name__ == "__main__":
    run_stage(main)
