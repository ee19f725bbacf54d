"""Stages `demos@<domain>` and `rollout@<domain>`: trajectories on a domain's training tasks.

`python -m stages.rollout SECTION DOMAIN` runs the agent that params section SECTION names on every
training task of DOMAIN, `samples_per_task` times:
- `demos`: scripted demonstrations that warm-start a tiny base policy (stage `base_model`);
- `rollout`: the offline data of SWEET-RL step 1, from the base policy (a model agent without a
  checkpoint samples from `models/DOMAIN/base`).

Reads params `SECTION`, `agents.<SECTION.agent>`, `DOMAIN.simulator`, `DOMAIN.scoring`, `episodes`;
writes `data/DOMAIN/SECTION/` (`trajectories.parquet`: one row per (task, sample), the dialogue
nested, the reward; `manifest.json`) and `reports/DOMAIN/stages/SECTION/metrics.json`. Resumable:
finished episodes are kept in `.sweetflow/checkpoints/` until the output is complete.
"""

from __future__ import annotations

import argparse
import json

from sweetflow import paths
from sweetflow.errors import run_stage
from sweetflow.params import load_params
from sweetflow.rollout import episode_stage


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("section", choices=("demos", "rollout"))
    parser.add_argument("domain", choices=("backend", "frontend"))
    args = parser.parse_args()
    params = load_params()
    agent = getattr(params, args.section).agent
    metrics = episode_stage(
        params, args.domain, f"{args.section}@{args.domain}", args.section, params.agents[agent], f"agents.{agent}",
        "train", paths.episodes(args.domain, args.section), paths.stage_metrics(args.domain, args.section),
    )  # fmt: skip
    print(json.dumps(metrics, indent=2))


if __name__ == "__main__":
    run_stage(main)
