"""Stage `validate@<domain>-<name>`: the trained policy `models/DOMAIN/policies/NAME` on the domain's
validation tasks, each seed's checkpoint once: what every tuning choice is made on.

`python -m stages.validate DOMAIN NAME` runs exactly as `evaluate_policy` does, on
`data/DOMAIN/tasks/val.parquet` instead of the test tasks, and writes `data/DOMAIN/validation/NAME/`
(`trajectories-seed<k>.parquet`) and `reports/DOMAIN/stages/validation/NAME/metrics.json`. Resumable.
"""

from __future__ import annotations

import json

from stages._episodes import checkpoint_evaluation_stage
from sweetflow.core.errors import run_stage
from sweetflow.stage import begin


def main() -> None:
    stage = begin("validate", __doc__, item="policies")
    metrics = checkpoint_evaluation_stage(stage, stage.upstream("policy", stage.item), split="val")
    print(json.dumps(metrics, indent=2))


if __name__ == "__main__":
    run_stage(main)
