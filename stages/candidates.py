"""Stage `candidates@<domain>`: fresh actions of the base policy at sampled turn states (docs/algorithm.md, step 4).

`python -m stages.candidates DOMAIN` reads params `candidates`, the domain's training tasks, its
offline rollouts and the sampling policy's checkpoint (without one: the domain's base model). A `share`
of the (trajectory, agent turn) states is drawn (`states`: uniformly, or the first trajectories'
turns); at each, the policy samples `n` next actions from the dialogue so far, each
with its own seed, and reports their log-probs where its backend returns them (the official ranking
variant subtracts them; `transformers serve` returns none, and they are then null). Resumable: a run cut
off keeps the candidates of each batch it finished under `.sweetflow/checkpoints/`, and generates only the
rest.

Writes `data/DOMAIN/candidates/` (`states.parquet`, `candidates.parquet`: one row per state and
candidate with its message and log-probs; `manifest.json`) and
`reports/DOMAIN/stages/candidates/metrics.json`.
"""

from __future__ import annotations

import json

import polars as pl

from sweetflow.agents.model import open_model_agent, served_records
from sweetflow.core.artifacts import JsonLines, checkpoint_path
from sweetflow.core.errors import run_stage
from sweetflow.core.tables import CANDIDATES
from sweetflow.dialogue import ANSWER_MARKER
from sweetflow.rl.candidates import generate_candidates
from sweetflow.rl.pairs import sample_turn_states
from sweetflow.stage import begin, with_checkpoint


def main() -> None:
    stage = begin("candidates", __doc__)
    p = stage.params.candidates
    policy = with_checkpoint(p.policy, stage)
    (tasks_file, rollout), tasks = stage.offline_data()
    trajectories = pl.read_parquet(rollout)
    states = sample_turn_states(trajectories, p.share, p.seed, p.states)
    inputs = [tasks_file, rollout] + ([policy.checkpoint] if policy.checkpoint else [])
    kept = JsonLines(checkpoint_path(stage.name, stage.sections, inputs))
    with stage.output(inputs, p.seed) as out:
        with open_model_agent(policy) as agent:
            candidates, failed = generate_candidates(agent, tasks, trajectories, states, p.n, p.seed, keep=kept)
        out.served.update(served_records({"candidates.policy": policy}, out.inputs))
        states.write_parquet(out.dir / "states.parquet")
        candidates.write_parquet(out.dir / CANDIDATES)
        answers = candidates["message"].str.contains(ANSWER_MARKER, literal=True)
        out.metrics.update(
            states=states.height,
            candidates=candidates.height,
            failed_generations=failed,
            answer_share=round(float(answers.mean()), 4) if candidates.height else 0.0,
            mean_tokens=round(float(candidates["n_tokens"].mean()), 2) if candidates.height else 0.0,
        )
    kept.path.unlink(missing_ok=True)
    print(json.dumps(out.metrics, indent=2))


if __name__ == "__main__":
    run_stage(main)
