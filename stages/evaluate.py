"""Stages `evaluate@<method>` and `evaluate_model@<method>`: a method's policy on the test tasks.

`python -m stages.evaluate METHOD` evaluates the agent `agents.METHOD` (scripted, no_ask, or a
served model) once: `data/evaluations/<METHOD>/trajectories.parquet`.
`python -m stages.evaluate --model METHOD` evaluates the checkpoint `evaluate.models.METHOD` (a stage
output: models/base, or a trained policy with one checkpoint per seed) once per seed of `seeds`,
generating as `evaluate.policy` says: `data/evaluations/<METHOD>/trajectories-seed<k>.parquet`.
Both read params `evaluate`, `simulator`, `episodes`, `sandbox` and write
`reports/backend/<METHOD>/metrics.json` (`tests_passed`, `success_rate`, mean turns, protocol
compliance, failures; for checkpoints the means over seeds, their spread and each seed's own).
Resumable.
"""

from __future__ import annotations

import argparse
import json

from sweetflow.errors import InputError, run_stage
from sweetflow.params import load_params
from sweetflow.rollout import checkpoint_evaluation_stage, episode_stage


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("method")
    parser.add_argument("--model", action="store_true", help="METHOD is a key of evaluate.models (a checkpoint)")
    args = parser.parse_args()
    params = load_params()
    if args.model:
        if args.method not in params.evaluate.models:
            raise InputError(f"params.yaml: evaluate.models: no method {args.method!r}; defined: {sorted(params.evaluate.models)}")
        metrics = checkpoint_evaluation_stage(params, args.method)
    else:
        if args.method not in params.agents:
            raise InputError(f"params.yaml: agents: no agent named {args.method!r}; defined: {sorted(params.agents)}")
        metrics = episode_stage(
            params, f"evaluate@{args.method}", "evaluate", params.agents[args.method], f"agents.{args.method}",
            "data/tasks/test.parquet", f"data/evaluations/{args.method}", f"reports/backend/{args.method}/metrics.json",
        )
    print(json.dumps(metrics, indent=2))


if __name__ == "__main__":
    run_stage(main)
