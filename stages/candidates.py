"""Stage `candidates`: fresh actions of the base policy at sampled turn states (DESIGN.md §2 step 4).

`python -m stages.candidates` reads params `candidates`, the training tasks, the offline rollouts
and the sampling policy's checkpoint (the base model). A uniform `share` of all (trajectory, agent
turn) states is drawn; at each, the policy samples `n` next actions from the dialogue so far, each
with its own seed, and reports their log-probs (the official ranking variant subtracts them).

Writes `data/candidates/` (`states.parquet`, `candidates.parquet`: one row per state and candidate
with its message and log-probs; `manifest.json`) and `reports/candidates/metrics.json`.
"""

from __future__ import annotations

import json

import polars as pl

from sweetflow.agents import make_agent
from sweetflow.artifacts import stage_output
from sweetflow.dialogue import ANSWER_MARKER
from sweetflow.errors import InputError, run_stage
from sweetflow.pairs import sample_turn_states
from sweetflow.params import load_params
from sweetflow.tasks.table import read_tasks
from sweetflow.training_data import generate_candidates

TASKS = "data/tasks/train.parquet"
ROLLOUT = "data/rollout/trajectories.parquet"


def main() -> None:
    p = load_params().candidates
    if p.policy.backend not in ("transformers", "openai"):
        raise InputError(f"params.yaml: candidates.policy.backend: a model backend is needed for log-probs, got {p.policy.backend!r}")
    tasks = {t["task_id"]: t for t in read_tasks(TASKS).to_dicts()}
    trajectories = pl.read_parquet(ROLLOUT)
    states = sample_turn_states(trajectories, p.share, p.seed)
    inputs = [TASKS, ROLLOUT] + ([p.policy.checkpoint] if p.policy.checkpoint else [])
    with stage_output("data/candidates", "candidates", {"candidates": p}, inputs, p.seed,
                      "reports/candidates/metrics.json") as out:  # fmt: skip
        candidates, failed = generate_candidates(make_agent(p.policy), tasks, trajectories, states, p.n, p.seed)
        states.write_parquet(out.dir / "states.parquet")
        candidates.write_parquet(out.dir / "candidates.parquet")
        answers = candidates["message"].str.contains(ANSWER_MARKER, literal=True)
        out.metrics.update(
            states=states.height,
            candidates=candidates.height,
            failed_generations=failed,
            answer_share=round(float(answers.mean()), 4) if candidates.height else 0.0,
            mean_tokens=round(float(candidates["n_tokens"].mean()), 2) if candidates.height else 0.0,
        )
    print(json.dumps(out.metrics, indent=2))


if __name__ == "__main__":
    run_stage(main)
