"""Stage `rollout@<domain>`: the offline data of SWEET-RL step 1, the base policy's own trajectories
on a domain's training tasks, or trajectories made elsewhere.

`python -m stages.rollout DOMAIN` with `rollout.source: policy` runs the agent `rollout.agent` names
(a model agent without a checkpoint samples from `models/DOMAIN/base`) on the first
`rollout.max_tasks` training tasks, `rollout.samples_per_task` times each; resumable. With `import`,
it reads the trajectories of `rollout.import_file` (ColBench's official shape: the official offline
data) that lie on those training tasks instead, and scores their answers again or keeps the file's
rewards (`rollout.import_reward`); see `sweetflow.rollout.offline`. Reads params `rollout`,
`agents.<rollout.agent>`, `DOMAIN.simulator`, `DOMAIN.scoring`, `DOMAIN.tasks.source`, `episodes`;
writes `data/DOMAIN/rollout/` (`trajectories.parquet`, `manifest.json`) and
`reports/DOMAIN/stages/rollout/metrics.json`.
"""

from __future__ import annotations

import json

from stages._episodes import episode_stage
from sweetflow.core.errors import run_stage
from sweetflow.core.tables import TRAJECTORIES, read_tasks, task_file
from sweetflow.rollout.offline import import_rollout
from sweetflow.stage import Stage, begin


def import_stage(stage: Stage) -> dict:
    params, domain, p = stage.params, stage.domain, stage.params.rollout
    train, val = stage.upstream("tasks", file=task_file("train")), stage.upstream("tasks", file=task_file("val"))
    inputs = [train, val, p.import_file]
    with stage.output(inputs) as out:
        out.metrics.update(
            import_rollout(
                p.import_file,
                read_tasks(domain, "train"),
                read_tasks(domain, "val"),
                domain,
                params,
                out.dir / TRAJECTORIES,
            )
        )
    return out.metrics


def main() -> None:
    stage = begin("rollout", __doc__)
    if stage.params.rollout.source == "import":
        print(json.dumps(import_stage(stage), indent=2))
    else:
        print(json.dumps(episode_stage(stage, "rollout", "train"), indent=2))


if __name__ == "__main__":
    run_stage(main)
