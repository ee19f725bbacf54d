"""Stage `step_pairs@<domain>-<critic>`: step-level preference pairs from ranked candidates (DESIGN.md §2 step 6).

`python -m stages.step_pairs DOMAIN CRITIC` reads params `step_pairs` and
`data/DOMAIN/ranked/CRITIC/`; per state it draws `num_pairs` (chosen from the top half, rejected
from the bottom half) pairs with a strict score gap (`sweetflow.pairs.step_pairs`). Writes
`data/DOMAIN/step_pairs/CRITIC/pairs.parquet` and `reports/DOMAIN/stages/step_pairs/CRITIC/metrics.json`.
"""

from __future__ import annotations

import argparse
import json

import polars as pl

from sweetflow import paths
from sweetflow.artifacts import stage_output
from sweetflow.errors import run_stage
from sweetflow.pairs import step_pairs
from sweetflow.params import load_params


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("domain", choices=("backend", "frontend"))
    parser.add_argument("critic", help="a key of `critics` in params.yaml")
    args = parser.parse_args()
    domain, name = args.domain, args.critic
    p = load_params().step_pairs
    ranked_file = f"{paths.ranked(domain, name)}/candidates.parquet"
    ranked = pl.read_parquet(ranked_file)
    with stage_output(paths.step_pairs(domain, name), f"step_pairs@{domain}-{name}", {"step_pairs": p}, [ranked_file],
                      p.seed, paths.stage_metrics(domain, "step_pairs", name)) as out:  # fmt: skip
        pairs = step_pairs(ranked, p.num_pairs, p.seed)
        pairs.write_parquet(out.dir / "pairs.parquet")
        gap = pairs["chosen_score"] - pairs["rejected_score"]
        out.metrics.update(
            pairs=pairs.height,
            states=ranked["state_id"].n_unique(),
            states_with_pairs=pairs["state_id"].n_unique(),
            mean_score_gap=round(float(gap.mean()), 5) if pairs.height else 0.0,
        )
    print(json.dumps(out.metrics, indent=2))


if __name__ == "__main__":
    run_stage(main)
