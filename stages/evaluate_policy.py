"""Stage `evaluate_policy@<domain>-<name>`: the trained policy `models/DOMAIN/policies/NAME` on a
domain's test tasks, each seed's checkpoint once.

`python -m stages.evaluate_policy DOMAIN NAME` generates as `evaluate.policy` says and reads params
`evaluate`, `seeds`, `DOMAIN.simulator`, `DOMAIN.scoring`, `episodes`; writes
`data/DOMAIN/evaluations/NAME/` (`trajectories-seed<k>.parquet`) and
`reports/DOMAIN/NAME/metrics.json`: the means over seeds, their spread and each seed's own.
Resumable.
"""

from __future__ import annotations

import json

from stages._episodes import checkpoint_evaluation_stage
from sweetflow.core.errors import run_stage
from sweetflow.stage import begin


def main() -> None:
    stage = begin("evaluate_policy", __doc__, item="policies")
    print(json.dumps(checkpoint_evaluation_stage(stage, stage.upstream("policy", stage.item)), indent=2))


if __name__ == "__main__":
    run_stage(main)
