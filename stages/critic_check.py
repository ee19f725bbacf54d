"""Stage `critic_check@<critic>`: how often the critic's ranking of two candidates agrees with
their outcomes when both are played out to the end (sweetflow.agreement).

`python -m stages.critic_check CRITIC` reads params `critic_check`, `candidates` (its policy plays
the episodes out), `simulator`, `episodes`, `sandbox`, the ranked candidates of CRITIC, the
candidates, the offline rollouts, the training tasks and the policy's checkpoint. Writes
`data/critic_check/<CRITIC>/` (`picked.parquet`: the states and their best and worst candidate;
`trajectories.parquet`: the continuations; `manifest.json`) and
`reports/critic_check/<CRITIC>/metrics.json` (`ranking_agreement` and its counts). Resumable.
"""

from __future__ import annotations

import argparse
import json

import polars as pl

from sweetflow.agents import make_agent
from sweetflow.agreement import ReplayAgent, agreement, continuation_tasks, pick_extremes
from sweetflow.artifacts import checkpoint_path, stage_output
from sweetflow.errors import run_stage
from sweetflow.params import load_params
from sweetflow.rollout import collect
from sweetflow.tasks.table import read_tasks

TASKS = "data/tasks/train.parquet"
ROLLOUT = "data/rollout/trajectories.parquet"
CANDIDATES = "data/candidates/candidates.parquet"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("critic", help="a key of `critics` in params.yaml")
    name = parser.parse_args().critic
    params = load_params()
    p, policy = params.critic_check, params.candidates.policy
    ranked_file = f"data/ranked/{name}/candidates.parquet"
    stage = f"critic_check@{name}"
    sections = {"critic_check": p, "candidates.policy": policy, "simulator": params.simulator,
                "episodes": params.episodes, "sandbox": params.sandbox}  # fmt: skip
    inputs = [TASKS, ROLLOUT, CANDIDATES, ranked_file] + ([policy.checkpoint] if policy.checkpoint else [])
    tasks = {t["task_id"]: t for t in read_tasks(TASKS).to_dicts()}
    candidates = pl.read_parquet(CANDIDATES)
    picked = pick_extremes(pl.read_parquet(ranked_file), p.states, p.seed)
    episode_tasks, scripts = continuation_tasks(picked, candidates, pl.read_parquet(ROLLOUT), tasks)
    progress = checkpoint_path(stage, sections, inputs)
    with stage_output(f"data/critic_check/{name}", stage, sections, inputs, p.seed,
                      f"reports/critic_check/{name}/metrics.json") as out:  # fmt: skip
        agent = ReplayAgent(scripts, make_agent(policy))
        outcomes = collect(episode_tasks, agent, params, p.rollouts, p.seed, progress, stage)
        picked.write_parquet(out.dir / "picked.parquet")
        outcomes.write_parquet(out.dir / "trajectories.parquet")
        out.metrics.update(agreement(picked, outcomes), rollouts_per_candidate=p.rollouts)
    progress.unlink(missing_ok=True)
    print(json.dumps(out.metrics, indent=2))


if __name__ == "__main__":
    run_stage(main)
