"""Stage `evaluate@<method>`: a method's agent on the test tasks.

`python -m stages.evaluate METHOD` reads params `evaluate`, `agents.<METHOD>`, `simulator`,
`episodes`, `sandbox`; writes `data/evaluations/<METHOD>/` (`trajectories.parquet`,
`manifest.json`) and `reports/backend/<METHOD>/metrics.json` (`tests_passed`, `success_rate`, mean
turns, protocol compliance, failures). Resumable like `rollout`.
"""

from __future__ import annotations

import json
import sys

from sweetflow.errors import InputError, run_stage
from sweetflow.params import load_params
from sweetflow.rollout import episode_stage


def main() -> None:
    if len(sys.argv) != 2:
        raise InputError("usage: python -m stages.evaluate METHOD (a key of `agents` in params.yaml)")
    method = sys.argv[1]
    params = load_params()
    if method not in params.agents:
        raise InputError(f"params.yaml: agents: no agent named {method!r}; defined: {sorted(params.agents)}")
    metrics = episode_stage(
        params, f"evaluate@{method}", "evaluate", method, "data/tasks/test.parquet",
        f"data/evaluations/{method}", f"reports/backend/{method}/metrics.json",
    )
    print(json.dumps(metrics, indent=2))


if __name__ == "__main__":
    run_stage(main)
