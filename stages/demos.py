"""Stage `demos@<domain>`: scripted demonstrations on a domain's training tasks, which warm-start a
tiny base policy (stage `base_model`).

`python -m stages.demos DOMAIN` runs the agent `demos.agent` names on every training task,
`demos.samples_per_task` times. Reads params `demos`, `agents.<demos.agent>`, `DOMAIN.simulator`,
`DOMAIN.scoring`, `episodes`; writes `data/DOMAIN/demos/` (`trajectories.parquet`: one row per
(task, sample), the dialogue nested, the reward; `manifest.json`) and
`reports/DOMAIN/stages/demos/metrics.json`. Resumable: finished episodes are kept in
`.sweetflow/checkpoints/` until the output is complete.
"""

from __future__ import annotations

import json

from stages._episodes import episode_stage
from sweetflow.core.errors import run_stage
from sweetflow.stage import begin


def main() -> None:
    stage = begin("demos", __doc__)
    print(json.dumps(episode_stage(stage, "demos", "train"), indent=2))


if __name__ == "__main__":
    run_stage(main)
