"""Stage `evaluate_base@<domain>`: the base model `models/DOMAIN/base` on a domain's test tasks, once
per seed of `seeds` (the paper's zero-shot row).

`python -m stages.evaluate_base DOMAIN` generates as `evaluate.policy` says and reads params
`evaluate`, `seeds`, `DOMAIN.simulator`, `DOMAIN.scoring`, `episodes`; writes
`data/DOMAIN/evaluations/zero_shot/` (`trajectories-seed<k>.parquet`) and
`reports/DOMAIN/zero_shot/metrics.json`: the means over seeds, their spread and each seed's own.
Resumable.
"""

from __future__ import annotations

import json

from stages._episodes import checkpoint_evaluation_stage
from sweetflow.core.errors import run_stage
from sweetflow.stage import begin


def main() -> None:
    stage = begin("evaluate_base", __doc__)
    print(json.dumps(checkpoint_evaluation_stage(stage, stage.upstream("base_model")), indent=2))


if __name__ == "__main__":
    run_stage(main)
