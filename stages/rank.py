"""Stage `rank@<domain>-<critic>`: the critic's score of every candidate action (docs/algorithm.md, step 5).

`python -m stages.rank DOMAIN CRITIC` reads params `rank` and `critics.CRITIC`, the domain's
candidates, training tasks, offline rollouts (the states), the critic and the base model. Each candidate
is read after its state in the critic's view (with the reference solution when the critic was
trained with it) and scored by its mean per-token log-ratio:
- `baseline: reference` (the paper): the advantage the critic's loss was trained on, mean log π_critic −
  mean log π_ref, both in the critic's view, π_ref the critic's own reference (the warmed-up model when
  the critic had a warm-up, else the base model: `sweetflow.rl.ranking`);
- `baseline: sampling` (the official code): mean log π_critic minus the sampling policy's own mean
  log-prob of the candidate, recorded at sampling time in the policy's view.
A candidate whose state and action exceed the critic's context is left out (counted). Resumable: a run
cut off keeps each pass's log-probs as far as it computed them (`sweetflow.rl.logprobs.kept_segment_logps`)
under `.sweetflow/checkpoints/`, and computes only the rest. The reference's pass stays kept after the stage,
named by the reference's bytes and the candidates' view: a critic tuned at several learning rates from one
warm-up has one reference, whose pass (half the stage's time) then runs once.

Writes `data/DOMAIN/ranked/CRITIC/` (`candidates.parquet`: state_id, candidate, n_tokens (as sampled),
score, critic and baseline mean log-probs; `manifest.json`) and `reports/DOMAIN/stages/ranked/CRITIC/metrics.json`.
"""

from __future__ import annotations

import json
import shutil

import polars as pl

from sweetflow.core.artifacts import checkpoint_path
from sweetflow.core.errors import run_stage
from sweetflow.core.tables import CANDIDATES
from sweetflow.models.checkpoint import load_checkpoint, pad_id, placement, resolve_device
from sweetflow.rl.ranking import (
    critic_reference,
    ranking_summary,
    require_sampled_logprobs,
    sampling_scores,
    score_candidates,
)
from sweetflow.rl.sequences import candidate_sequences, context_length
from sweetflow.stage import begin


def main() -> None:
    stage = begin("rank", __doc__, item="critics")
    p, critic_params = stage.params.rank, stage.params.critics[stage.item]
    critic_dir, base = stage.upstream("critic", stage.item), stage.upstream("base_model")
    (tasks_file, rollout), tasks = stage.offline_data()
    candidates_file = stage.upstream("candidates", file=CANDIDATES)
    candidates = pl.read_parquet(candidates_file)
    if p.baseline == "sampling":
        require_sampled_logprobs(candidates, candidates_file)
    device = resolve_device(stage.params.device)
    critic, tokenizer = load_checkpoint(critic_dir, device)
    view = critic_params.training_info, context_length(tokenizer, critic.config)
    sequences = candidate_sequences(tokenizer, tasks, pl.read_parquet(rollout), candidates, *view)
    kept = candidates.filter(pl.Series([s is not None for s in sequences], dtype=pl.Boolean))
    scored, pad = [s for s in sequences if s is not None], pad_id(tokenizer)
    inputs = [tasks_file, rollout, candidates_file, critic_dir] + ([base] if p.baseline == "reference" else [])
    passes = checkpoint_path(stage.name, stage.sections, inputs).with_suffix("")  # kept for a rerun
    with stage.output(inputs) as out:
        if p.baseline == "reference":
            reference_dir = critic_reference(critic_dir, base)
            reference, _ = load_checkpoint(reference_dir, device)
            out.devices["reference"] = placement(reference)
            # Everything that decides the reference's pass: the model, the candidates in the critic's view, batching.
            deciding = {"rank": p, "training_info": critic_params.training_info, "device": stage.params.device}
            shared = checkpoint_path("rank-reference", deciding, [tasks_file, rollout, candidates_file, reference_dir])
            args = (p.batch_size, pad, critic_params.length_normalize)
            scores = score_candidates(critic, reference, scored, *args, passes, shared.with_suffix(""))
        else:
            scores = sampling_scores(critic, scored, kept["logprob_mean"].to_list(), p.batch_size, pad, passes)
        out.devices["critic"] = placement(critic)
        ranked = scores.ranked(kept)
        ranked.write_parquet(out.dir / CANDIDATES)
        out.metrics.update(baseline=p.baseline, too_long=len(sequences) - ranked.height, **ranking_summary(ranked))
    shutil.rmtree(passes, ignore_errors=True)
    print(json.dumps(out.metrics, indent=2))


if __name__ == "__main__":
    run_stage(main)
