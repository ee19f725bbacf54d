"""Stage `critic_check@<domain>-<critic>`: how often the critic's ranking of two candidates agrees
with their outcomes when both are played out to the end (sweetflow.rl.critic_check).

`python -m stages.critic_check DOMAIN CRITIC` reads params `critic_check`, `candidates.policy` (it
plays the episodes out), `DOMAIN.simulator`, `DOMAIN.scoring`, `episodes`, the ranked candidates of
CRITIC, the candidates, the offline rollouts, the training tasks and the policy's checkpoint.
Writes `data/DOMAIN/critic_check/CRITIC/` (`picked.parquet`: the states and their best and worst
candidate; `trajectories.parquet`: the continuations; `manifest.json`) and
`reports/DOMAIN/stages/critic_check/CRITIC/metrics.json` (`ranking_agreement` and its counts). Resumable.
"""

from __future__ import annotations

import json

import polars as pl

from sweetflow.agents.model import served_records
from sweetflow.agents.replay import ReplayAgent
from sweetflow.core.artifacts import checkpoint_path
from sweetflow.core.errors import run_stage
from sweetflow.core.tables import CANDIDATES, PICKED, TRAJECTORIES
from sweetflow.domain import get_domain
from sweetflow.rl.critic_check import agreement, continuation_tasks, pick_extremes
from sweetflow.rollout.engine import collect
from sweetflow.stage import begin, with_checkpoint


def main() -> None:
    stage = begin("critic_check", __doc__, item="critics")
    domain, name, params = stage.domain, stage.item, stage.params
    p, policy = params.critic_check, with_checkpoint(params.candidates.policy, stage)
    (tasks_file, rollout), tasks = stage.offline_data()
    candidates_file = stage.upstream("candidates", file=CANDIDATES)
    ranked_file = stage.upstream("rank", name, file=CANDIDATES)
    inputs = [tasks_file, rollout, candidates_file, ranked_file] + ([policy.checkpoint] if policy.checkpoint else [])
    candidates = pl.read_parquet(candidates_file)
    picked = pick_extremes(pl.read_parquet(ranked_file), p.states, p.seed)
    episode_tasks, scripts = continuation_tasks(picked, candidates, pl.read_parquet(rollout), tasks)
    progress = checkpoint_path(stage.name, stage.sections, inputs)
    with stage.output(inputs, p.seed) as out:
        with get_domain(domain).open_agent(policy) as model:
            agent = ReplayAgent(scripts, model)
            outcomes = collect(episode_tasks, agent, params, domain, p.rollouts, p.seed, progress, stage.name)
        out.served.update(served_records({"candidates.policy": policy}, out.inputs))
        picked.write_parquet(out.dir / PICKED)
        outcomes.write_parquet(out.dir / TRAJECTORIES)
        out.metrics.update(agreement(picked, outcomes), rollouts_per_candidate=p.rollouts)
    progress.unlink(missing_ok=True)
    print(json.dumps(out.metrics, indent=2))


if __name__ == "__main__":
    run_stage(main)
