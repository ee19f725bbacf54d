"""Stage `evaluate@<method>`: a method's agent on the test tasks.

`python -m stages.evaluate METHOD` reads params `evaluate`, `agents.<METHOD>`, `simulator`,
`episodes`, `sandbox`; writes `reports/backend/<METHOD>/` with `metrics.json` (`tests_passed`,
`success_rate`, mean turns, protocol compliance, failures), `trajectories.parquet` and
`manifest.json`. Resumable like `rollout`.
"""

from __future__ import annotations

import json
import sys

from sweetflow.agents import make_agent
from sweetflow.artifacts import checkpoint_path, stage_output, write_json
from sweetflow.errors import InputError, run_stage
from sweetflow.params import load_params
from sweetflow.rollout import collect, summarize_episodes
from sweetflow.tasks.table import read_tasks

TASKS = "data/tasks/test.parquet"


def main() -> None:
    if len(sys.argv) != 2:
        raise InputError("usage: python -m stages.evaluate METHOD (a key of `agents` in params.yaml)")
    method = sys.argv[1]
    params = load_params()
    if method not in params.agents:
        raise InputError(f"params.yaml: agents: no agent named {method!r}; defined: {sorted(params.agents)}")
    p = params.evaluate
    sections = {
        "evaluate": p,
        f"agents.{method}": params.agents[method],
        "simulator": params.simulator,
        "episodes": params.episodes,
        "sandbox": params.sandbox,
    }
    stage = f"evaluate@{method}"
    tasks = read_tasks(TASKS).to_dicts()
    checkpoint = checkpoint_path(stage, sections, [TASKS])
    with stage_output(f"reports/backend/{method}", stage, sections, [TASKS], seed=p.seed) as out:
        agent = make_agent(params.agents[method])
        frame = collect(tasks, agent, params, p.samples_per_task, p.seed, checkpoint, stage)
        frame.write_parquet(out / "trajectories.parquet")
        metrics = summarize_episodes(frame)
        write_json(out / "metrics.json", metrics)
    checkpoint.unlink(missing_ok=True)
    print(json.dumps(metrics, indent=2))


if __name__ == "__main__":
    run_stage(main)
