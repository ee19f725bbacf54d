"""Stage `trajectory_pairs`: preferences between trajectories of the same task (SWEET-RL step 2).

Reads params `pairs` and `data/rollout/trajectories.parquet`; writes `data/trajectory_pairs/`
(`pairs.parquet`: task_id, chosen and rejected sample and reward; `manifest.json`) and
`reports/trajectory_pairs/metrics.json` (pairs, tasks with a pair, tasks rolled out).
"""

from __future__ import annotations

import json

import polars as pl

from sweetflow.artifacts import stage_output
from sweetflow.errors import run_stage
from sweetflow.pairs import trajectory_pairs
from sweetflow.params import load_params

ROLLOUT = "data/rollout/trajectories.parquet"


def main() -> None:
    params = load_params()
    p = params.pairs
    trajectories = pl.read_parquet(ROLLOUT)
    with stage_output("data/trajectory_pairs", "trajectory_pairs", {"pairs": p}, [ROLLOUT],
                      metrics="reports/trajectory_pairs/metrics.json") as out:
        pairs = trajectory_pairs(trajectories, p.mode, p.success_reward, p.min_gap)
        pairs.write_parquet(out.dir / "pairs.parquet")
        out.metrics.update(
            pairs=pairs.height,
            tasks_with_pairs=pairs["task_id"].n_unique(),
            tasks=trajectories["task_id"].n_unique(),
        )
    print(json.dumps(out.metrics, indent=2))


if __name__ == "__main__":
    run_stage(main)
