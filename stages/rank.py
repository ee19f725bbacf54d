"""Stage `rank@<critic>`: the critic's score of every candidate action (DESIGN.md §2 step 5).

`python -m stages.rank CRITIC` reads params `rank` and `critics.CRITIC`, the candidates, the
training tasks, the offline rollouts (the states), the critic and the base model. Each candidate
is read after its state in the critic's view (with the reference solution when the critic was
trained with it) and scored by its mean per-token log-ratio:
- `baseline: reference` (the paper): mean log π_critic − mean log π_base, both in the critic's view;
- `baseline: sampling` (the official code): mean log π_critic minus the sampling policy's own mean
  log-prob of the candidate, recorded at sampling time in the policy's view.
A candidate whose state and action exceed the critic's context is left out (counted).

Writes `data/ranked/<CRITIC>/` (`candidates.parquet`: state_id, candidate, score, critic and
baseline mean log-probs; `manifest.json`) and `reports/ranked/<CRITIC>/metrics.json`.
"""

from __future__ import annotations

import argparse
import json

import polars as pl

from sweetflow.artifacts import stage_output
from sweetflow.errors import InputError, run_stage
from sweetflow.models.checkpoint import load_checkpoint
from sweetflow.models.sequences import context_length
from sweetflow.params import load_params
from sweetflow.preference import reference_segment_logps
from sweetflow.tasks.table import read_tasks
from sweetflow.training_data import candidate_sequences

TASKS = "data/tasks/train.parquet"
ROLLOUT = "data/rollout/trajectories.parquet"
CANDIDATES = "data/candidates/candidates.parquet"
BASE = "models/base"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("critic", help="a key of `critics` in params.yaml")
    name = parser.parse_args().critic
    params = load_params()
    if name not in params.critics:
        raise InputError(f"params.yaml: critics: no critic named {name!r}; defined: {sorted(params.critics)}")
    p, critic_params = params.rank, params.critics[name]
    critic_dir = f"models/critics/{name}"
    tasks = {t["task_id"]: t for t in read_tasks(TASKS).to_dicts()}
    candidates = pl.read_parquet(CANDIDATES)
    critic, tokenizer = load_checkpoint(critic_dir)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    sequences = candidate_sequences(
        tokenizer, tasks, pl.read_parquet(ROLLOUT), candidates, critic_params.training_info,
        context_length(tokenizer, critic.config),
    )  # fmt: skip
    fits = [s is not None for s in sequences]
    kept = candidates.filter(pl.Series(fits, dtype=pl.Boolean))
    kept_sequences = [s for s in sequences if s is not None]
    sections = {"rank": p, f"critics.{name}": critic_params}
    inputs = [TASKS, ROLLOUT, CANDIDATES, critic_dir] + ([BASE] if p.baseline == "reference" else [])
    with stage_output(f"data/ranked/{name}", f"rank@{name}", sections, inputs,
                      metrics=f"reports/ranked/{name}/metrics.json") as out:  # fmt: skip
        mine = reference_segment_logps(critic, kept_sequences, p.batch_size, pad_id)
        critic_mean = (mine.sums[:, 0] / mine.counts[:, 0].clamp(min=1)).tolist()
        if p.baseline == "reference":
            base, _ = load_checkpoint(BASE)
            ref = reference_segment_logps(base, kept_sequences, p.batch_size, pad_id)
            baseline = (ref.sums[:, 0] / ref.counts[:, 0].clamp(min=1)).tolist()
        else:
            baseline = kept["logprob_mean"].to_list()
        ranked = kept.select("state_id", "candidate").with_columns(
            critic_logp_mean=pl.Series(critic_mean, dtype=pl.Float64),
            baseline_logp_mean=pl.Series(baseline, dtype=pl.Float64),
        ).with_columns(score=pl.col("critic_logp_mean") - pl.col("baseline_logp_mean"))
        ranked.write_parquet(out.dir / "candidates.parquet")
        spread = ranked.group_by("state_id").agg(pl.col("score").std())["score"]
        out.metrics.update(
            baseline=p.baseline,
            candidates=ranked.height,
            too_long=len(sequences) - ranked.height,
            states=ranked["state_id"].n_unique(),
            mean_score=round(float(ranked["score"].mean()), 5) if ranked.height else 0.0,
            mean_score_spread_within_state=round(float(spread.mean()), 5) if spread.len() else 0.0,
        )
    print(json.dumps(out.metrics, indent=2))


if __name__ == "__main__":
    run_stage(main)
