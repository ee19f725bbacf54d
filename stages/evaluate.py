"""Stage `evaluate@<method>`: a method's agent on the test tasks.

`python -m stages.evaluate METHOD` reads params `evaluate`, `agents.<METHOD>`, `simulator`,
`episodes`, `sandbox`; writes `data/evaluations/<METHOD>/` (`trajectories.parquet`,
`manifest.json`) and `reports/backend/<METHOD>/metrics.json` (`tests_passed`, `success_rate`, mean
turns, protocol compliance, failures). Resumable like `rollout`.
"""

from __future__ import annotations

import json
import sys

from sweetflow.agents import make_agent
from sweetflow.artifacts import checkpoint_path, stage_output
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
    out_dir, metrics = f"data/evaluations/{method}", f"reports/backend/{method}/metrics.json"
    with stage_output(out_dir, stage, sections, [TASKS], p.seed, metrics) as out:
        agent = make_agent(params.agents[method])
        frame = collect(tasks, agent, params, p.samples_per_task, p.seed, checkpoint, stage)
        frame.write_parquet(out.dir / "trajectories.parquet")
        out.metrics.update(summarize_episodes(frame))
    checkpoint.unlink(missing_ok=True)
    print(json.dumps(out.metrics, indent=2))


if __name__ == "__main__":
    run_stage(main)
