"""Stage `critic_quality@<domain>-<critic>`: the SWEET-RL mechanism metrics of a critic, from the
labelled candidates (sweetflow.rl.critic_quality).

`python -m stages.critic_quality DOMAIN CRITIC` reads the candidates' labels
(`candidate_labels@<domain>`: good or bad at their state) and CRITIC's ranked candidates and step
pairs, and measures the critic's good-vs-bad accuracy and the make-up of its step pairs (the
informative share: a good action chosen over a bad one). Writes
`data/DOMAIN/critic_quality/CRITIC/` (`scored.parquet`: each labelled candidate with the critic's
score; `manifest.json`) and `reports/DOMAIN/stages/critic_quality/CRITIC/metrics.json`. Without
labels (a domain that has none) the metrics say so.
"""

from __future__ import annotations

import json

import polars as pl

from stages._common import begin
from sweetflow.core.errors import run_stage
from sweetflow.core.tables import CANDIDATES, LABELS, PAIRS, SCORED
from sweetflow.rl.critic_quality import good_vs_bad_accuracy, kind_shares, pair_makeup


def main() -> None:
    stage = begin("critic_quality", __doc__, item="critics")
    name = stage.item
    labels_file = stage.upstream("candidate_labels", file=LABELS)
    ranked_file = stage.upstream("rank", name, file=CANDIDATES)
    pairs_file = stage.upstream("step_pairs", name, file=PAIRS)
    inputs = [labels_file, ranked_file, pairs_file]
    with stage.output(inputs) as out:
        labels, ranked = pl.read_parquet(labels_file), pl.read_parquet(ranked_file)
        scored = labels.join(ranked.select("state_id", "candidate", "score"), on=["state_id", "candidate"], how="left")
        scored.write_parquet(out.dir / SCORED)
        if labels.is_empty():
            out.metrics.update(labelled=False)
        else:
            out.metrics.update(
                labelled=True,
                **good_vs_bad_accuracy(ranked, labels),
                **pair_makeup(pl.read_parquet(pairs_file), labels),
                kind_shares=kind_shares(labels),
            )
    print(json.dumps(out.metrics, indent=2))


if __name__ == "__main__":
    run_stage(main)
