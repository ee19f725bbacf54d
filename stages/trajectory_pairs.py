"""Stage `trajectory_pairs@<domain>`: preferences between trajectories of the same task (SWEET-RL step 2).

`python -m stages.trajectory_pairs DOMAIN` reads params `pairs` and the domain's offline rollouts;
rewards with a pass mark (backend) follow ColBench's backend rule, rewards without one (frontend) its
frontend rule (`sweetflow.rl.pairs`).
Writes `data/DOMAIN/trajectory_pairs/` (`pairs.parquet`: task_id, chosen and rejected sample and
reward; `manifest.json`) and `reports/DOMAIN/stages/trajectory_pairs/metrics.json` (pairs, tasks with
a pair, tasks rolled out).
"""

from __future__ import annotations

import json

import polars as pl

from sweetflow.core.errors import run_stage
from sweetflow.core.tables import PAIRS, TRAJECTORIES
from sweetflow.rl.pairs import trajectory_pairs
from sweetflow.stage import begin


def main() -> None:
    stage = begin("trajectory_pairs", __doc__)
    p = stage.params.pairs
    rollout = stage.upstream("rollout", file=TRAJECTORIES)
    trajectories = pl.read_parquet(rollout)
    with stage.output([rollout]) as out:
        pairs = trajectory_pairs(trajectories, p.success_reward, p.min_gap)
        pairs.write_parquet(out.dir / PAIRS)
        out.metrics.update(
            pairs=pairs.height,
            tasks_with_pairs=pairs["task_id"].n_unique(),
            tasks=trajectories["task_id"].n_unique(),
        )
    print(json.dumps(out.metrics, indent=2))


if __name__ == "__main__":
    run_stage(main)
