"""Stages that evaluate a method on a domain's test tasks.

- `evaluate@<domain>-<method>`: `python -m stages.evaluate DOMAIN METHOD` evaluates the agent
  `agents.METHOD` (scripted, no_ask, or a served model) once:
  `data/DOMAIN/evaluations/METHOD/trajectories.parquet`.
- `evaluate_base@<domain>`: `python -m stages.evaluate DOMAIN zero_shot --base` evaluates the base
  model `models/DOMAIN/base` once per seed of `seeds`.
- `evaluate_policy@<domain>-<name>`: `python -m stages.evaluate DOMAIN NAME --policy` evaluates the
  trained policy `models/DOMAIN/policies/NAME` (one checkpoint per seed), each seed's checkpoint once.

Checkpoints generate as `evaluate.policy` says and write `trajectories-seed<k>.parquet`. All read
params `evaluate`, `DOMAIN.simulator`, `DOMAIN.scoring`, `episodes` and write
`reports/DOMAIN/METHOD/metrics.json`: backend `tests_passed`, `success_rate`; frontend `similarity`,
`win_rate`; and mean turns, protocol compliance, failures; for checkpoints the means over seeds,
their spread and each seed's own. Resumable.
"""

from __future__ import annotations

import argparse
import json

from sweetflow import paths
from sweetflow.errors import InputError, run_stage
from sweetflow.params import load_params
from sweetflow.rollout import checkpoint_evaluation_stage, episode_stage

BASE_METHOD = "zero_shot"  # the base model's evaluation, as the paper calls it


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("domain", choices=("backend", "frontend"))
    parser.add_argument("method")
    kind = parser.add_mutually_exclusive_group()
    kind.add_argument("--base", action="store_true", help=f"evaluate the base model (METHOD must be {BASE_METHOD})")
    kind.add_argument("--policy", action="store_true", help="METHOD is a key of `policies` (a trained policy)")
    args = parser.parse_args()
    params = load_params()
    domain, method = args.domain, args.method
    if args.base:
        if method != BASE_METHOD:
            raise InputError(f"--base evaluates the base model as method {BASE_METHOD!r}, not {method!r}")
        metrics = checkpoint_evaluation_stage(params, domain, method, paths.base_model(domain), f"evaluate_base@{domain}")
    elif args.policy:
        if method not in params.policies:
            raise InputError(f"params.yaml: policies: no policy named {method!r}; defined: {sorted(params.policies)}")
        stage = f"evaluate_policy@{domain}-{method}"
        metrics = checkpoint_evaluation_stage(params, domain, method, paths.policy(domain, method), stage)
    else:
        if method not in params.agents:
            raise InputError(f"params.yaml: agents: no agent named {method!r}; defined: {sorted(params.agents)}")
        metrics = episode_stage(
            params, domain, f"evaluate@{domain}-{method}", "evaluate", params.agents[method], f"agents.{method}",
            "test", paths.evaluation(domain, method), paths.method_metrics(domain, method),
        )  # fmt: skip
    print(json.dumps(metrics, indent=2))


if __name__ == "__main__":
    run_stage(main)
