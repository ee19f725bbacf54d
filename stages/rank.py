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

from stages._common import begin
from sweetflow.core.artifacts import checkpoint_path
from sweetflow.core.errors import InputError, run_stage
from sweetflow.core.tables import CANDIDATES, TRAJECTORIES, read_tasks, task_file
from sweetflow.models.checkpoint import load_checkpoint, pad_id, placement, resolve_device
from sweetflow.rl.ranking import candidate_logps, critic_reference, score_candidates
from sweetflow.rl.sequences import candidate_sequences, context_length


def main() -> None:
    stage = begin("rank", __doc__, item="critics")
    domain, name, params = stage.domain, stage.item, stage.params
    p, critic_params = params.rank, params.critics[name]
    critic_dir, base = stage.upstream("critic", name), stage.upstream("base_model")
    tasks_file, rollout = stage.upstream("tasks", file=task_file("train")), stage.upstream("rollout", file=TRAJECTORIES)
    candidates_file = stage.upstream("candidates", file=CANDIDATES)
    tasks = {t["task_id"]: t for t in read_tasks(domain, "train")}
    candidates = pl.read_parquet(candidates_file)
    if p.baseline == "sampling" and candidates["logprob_mean"].null_count():
        raise InputError(
            f"params.yaml: rank.baseline: 'sampling' subtracts the sampling policy's log-probs, and "
            f"{candidates['logprob_mean'].null_count():,} candidates in {candidates_file} have none (candidates.policy's "  # noqa: E501
            "server returned none, as `transformers serve` does); use baseline 'reference', or sample with "
            "'transformers' or a vLLM server"
        )
    device = resolve_device(params.device)
    critic, tokenizer = load_checkpoint(critic_dir, device)
    sequences = candidate_sequences(
        tokenizer,
        tasks,
        pl.read_parquet(rollout),
        candidates,
        critic_params.training_info,
        context_length(tokenizer, critic.config),
    )
    fits = [s is not None for s in sequences]
    kept = candidates.filter(pl.Series(fits, dtype=pl.Boolean))
    kept_sequences = [s for s in sequences if s is not None]
    inputs = [tasks_file, rollout, candidates_file, critic_dir] + ([base] if p.baseline == "reference" else [])
    passes = checkpoint_path(stage.name, stage.sections, inputs).with_suffix("")  # kept for a rerun
    with stage.output(inputs) as out:
        if p.baseline == "reference":
            reference_dir = critic_reference(critic_dir, base)
            reference, _ = load_checkpoint(reference_dir, device)
            out.devices["reference"] = placement(reference)
            # Everything that decides the reference's pass: the model, the candidates in the critic's view, batching.
            view = {"rank": p, "training_info": critic_params.training_info, "device": params.device}
            reference_inputs = [tasks_file, rollout, candidates_file, reference_dir]
            scores = score_candidates(
                critic,
                reference,
                kept_sequences,
                p.batch_size,
                pad_id(tokenizer),
                critic_params.length_normalize,
                keep=passes,
                keep_reference=checkpoint_path("rank-reference", view, reference_inputs).with_suffix(""),
            )
            critic_mean, baseline, score = scores.critic_mean, scores.reference_mean, scores.score
        else:
            mine = candidate_logps(critic, "critic", kept_sequences, p.batch_size, pad_id(tokenizer), passes)
            critic_mean = (mine.sums[:, 0] / mine.counts[:, 0].clamp(min=1)).tolist()
            baseline = kept["logprob_mean"].to_list()
            score = [c - b for c, b in zip(critic_mean, baseline, strict=True)]
        out.devices["critic"] = placement(critic)
        ranked = kept.select("state_id", "candidate", "n_tokens").with_columns(
            critic_logp_mean=pl.Series(critic_mean, dtype=pl.Float64),
            baseline_logp_mean=pl.Series(baseline, dtype=pl.Float64),
            score=pl.Series(score, dtype=pl.Float64),
        )
        ranked.write_parquet(out.dir / CANDIDATES)
        spread = ranked.group_by("state_id").agg(pl.col("score").std())["score"]
        out.metrics.update(
            baseline=p.baseline,
            candidates=ranked.height,
            too_long=len(sequences) - ranked.height,
            states=ranked["state_id"].n_unique(),
            mean_score=round(float(ranked["score"].mean()), 5) if ranked.height else 0.0,
            mean_score_spread_within_state=round(float(spread.mean()), 5) if spread.len() else 0.0,
        )
    shutil.rmtree(passes, ignore_errors=True)
    print(json.dumps(out.metrics, indent=2))


if __name__ == "__main__":
    run_stage(main)
