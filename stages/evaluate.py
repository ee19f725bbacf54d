"""Stage `evaluate@<domain>-<agent>`: an agent of `agents` (scripted, no_ask, or a served model) on
a domain's test tasks, once.

`python -m stages.evaluate DOMAIN AGENT` reads params `evaluate`, `agents.AGENT`,
`DOMAIN.simulator`, `DOMAIN.scoring`, `episodes`; writes `data/DOMAIN/evaluations/AGENT/`
(`trajectories.parquet`, `manifest.json`) and `reports/DOMAIN/AGENT/metrics.json`: backend
`tests_passed`, `success_rate`; frontend `similarity`, `win_rate`; and mean turns, protocol
compliance, failures. Resumable.
"""

from __future__ import annotations

import json

from stages._episodes import episode_stage
from sweetflow.core.errors import run_stage
from sweetflow.stage import begin


def main() -> None:
    stage = begin("evaluate", __doc__, item="agents")
    print(json.dumps(episode_stage(stage, "evaluate", "test"), indent=2))


if __name__ == "__main__":
    run_stage(main)
