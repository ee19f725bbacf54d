"""Stages `evaluate@<method>` and `evaluate_model@<method>`: a method's policy on the test tasks.

`python -m stages.evaluate METHOD` evaluates the agent `agents.METHOD` (scripted, no_ask, or a
served model); `python -m stages.evaluate --model METHOD` evaluates the checkpoint
`evaluate.models.METHOD` (a stage output such as models/base), generating as `evaluate.policy` says.
Both read params `evaluate`, `simulator`, `episodes`, `sandbox` and write `data/evaluations/<METHOD>/`
(`trajectories.parquet`, `manifest.json`) and `reports/backend/<METHOD>/metrics.json`
(`tests_passed`, `success_rate`, mean turns, protocol compliance, failures). Resumable.
"""

from __future__ import annotations

import argparse
import json

from sweetflow.errors import InputError, run_stage
from sweetflow.params import load_params
from sweetflow.rollout import episode_stage


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("method")
    parser.add_argument("--model", action="store_true", help="METHOD is a key of evaluate.models (a checkpoint)")
    args = parser.parse_args()
    params = load_params()
    if args.model:
        if args.method not in params.evaluate.models:
            raise InputError(f"params.yaml: evaluate.models: no method {args.method!r}; defined: {sorted(params.evaluate.models)}")
        checkpoint = params.evaluate.models[args.method]
        agent, agent_section = params.evaluate.policy.model_copy(update={"checkpoint": checkpoint}), None
        stage = f"evaluate_model@{args.method}"
    else:
        if args.method not in params.agents:
            raise InputError(f"params.yaml: agents: no agent named {args.method!r}; defined: {sorted(params.agents)}")
        agent, agent_section = params.agents[args.method], f"agents.{args.method}"
        stage = f"evaluate@{args.method}"
    metrics = episode_stage(
        params, stage, "evaluate", agent, agent_section, "data/tasks/test.parquet",
        f"data/evaluations/{args.method}", f"reports/backend/{args.method}/metrics.json",
    )
    print(json.dumps(metrics, indent=2))


if __name__ == "__main__":
    run_stage(main)
