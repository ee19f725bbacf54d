"""Stage `step_pairs@<domain>-<critic>`: step-level preference pairs from ranked candidates (docs/algorithm.md, step 6).

`python -m stages.step_pairs DOMAIN CRITIC` reads params `step_pairs` and
`data/DOMAIN/ranked/CRITIC/`; it pairs candidates of the top half of a state against its bottom half
with a strict score gap, `num_pairs` per state drawn uniformly (`rule: halves`, the paper), drawn
among pairs of similar length (`length_matched`) or where the critic's gaps are largest
(`largest_gaps`) (`sweetflow.rl.pairs.step_pairs`). Writes `data/DOMAIN/step_pairs/CRITIC/pairs.parquet`
and `reports/DOMAIN/stages/step_pairs/CRITIC/metrics.json`, with the critic's length bias: the
within-state correlation of score and token count, and the pairs' chosen and rejected token counts.
"""

from __future__ import annotations

import json

import polars as pl

from sweetflow.core.errors import run_stage
from sweetflow.core.tables import CANDIDATES, PAIRS
from sweetflow.rl.pairs import length_bias, step_pairs
from sweetflow.stage import begin


def main() -> None:
    stage = begin("step_pairs", __doc__, item="critics")
    name, p = stage.item, stage.params.step_pairs
    ranked_file = stage.upstream("rank", name, file=CANDIDATES)
    ranked = pl.read_parquet(ranked_file)
    with stage.output([ranked_file], p.seed) as out:
        pairs = step_pairs(ranked, p.num_pairs, p.seed, p.rule, p.max_per_state, p.max_length_ratio)
        pairs.write_parquet(out.dir / PAIRS)
        gap = pairs["chosen_score"] - pairs["rejected_score"]
        out.metrics.update(
            pairs=pairs.height,
            states=ranked["state_id"].n_unique(),
            states_with_pairs=pairs["state_id"].n_unique(),
            mean_score_gap=round(float(gap.mean()), 5) if pairs.height else 0.0,
            **length_bias(ranked, pairs),
        )
    print(json.dumps(out.metrics, indent=2))


if __name__ == "__main__":
    run_stage(main)
