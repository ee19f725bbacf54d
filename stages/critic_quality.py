"""Stage `critic_quality@<domain>-<critic>`: the SWEET-RL mechanism metrics of a critic, from the
labelled candidates (sweetflow.rl.critic_quality).

`python -m stages.critic_quality DOMAIN CRITIC` reads the candidates' labels
(`candidate_labels@<domain>`: good or bad at their state), the candidates (the base policy's log-prob of
each) and CRITIC's ranked candidates and step pairs, and measures the critic's good-vs-bad accuracy, on
every combination and on the length-matched ones, beside the controls that read no dialogue (shorter or
longer is better, the base policy's log-prob), and the make-up of its step pairs (the informative share: a
good action chosen over a bad one). Writes `data/DOMAIN/critic_quality/CRITIC/` (`scored.parquet`: each
labelled candidate with the critic's score, its length and the base's log-prob; `manifest.json`) and
`reports/DOMAIN/stages/critic_quality/CRITIC/metrics.json`. Without labels (a domain that has none) the
metrics say so.
"""

from __future__ import annotations

import json

import polars as pl

from sweetflow.core.errors import run_stage
from sweetflow.core.tables import CANDIDATES, LABELS, PAIRS, SCORED
from sweetflow.rl.critic_quality import good_vs_bad_accuracy, kind_shares, length_and_controls, pair_makeup
from sweetflow.stage import begin


def main() -> None:
    stage = begin("critic_quality", __doc__, item="critics")
    name = stage.item
    labels_file = stage.upstream("candidate_labels", file=LABELS)
    candidates_file = stage.upstream("candidates", file=CANDIDATES)
    ranked_file = stage.upstream("rank", name, file=CANDIDATES)
    pairs_file = stage.upstream("step_pairs", name, file=PAIRS)
    inputs = [labels_file, candidates_file, ranked_file, pairs_file]
    with stage.output(inputs) as out:
        labels, ranked = pl.read_parquet(labels_file), pl.read_parquet(ranked_file)
        base = pl.read_parquet(candidates_file, columns=["state_id", "candidate", "logprob_mean"])
        scored = labels.join(
            ranked.select("state_id", "candidate", "score", "n_tokens"), on=["state_id", "candidate"], how="left"
        ).join(base.rename({"logprob_mean": "base_logprob"}), on=["state_id", "candidate"], how="left")
        scored.write_parquet(out.dir / SCORED)
        if labels.is_empty():
            out.metrics.update(labelled=False)
        else:
            out.metrics.update(
                labelled=True,
                **good_vs_bad_accuracy(ranked, labels),
                **length_and_controls(scored.filter(pl.col("score").is_not_null())),
                **pair_makeup(pl.read_parquet(pairs_file), labels),
                kind_shares=kind_shares(labels),
            )
    print(json.dumps(out.metrics, indent=2))


if __name__ == "__main__":
    run_stage(main)
