"""Stage `candidate_labels@<domain>`: every candidate action labelled good or bad at its state, once
for all critics (their mechanism metrics, `critic_quality@<domain>-<critic>`, and the site read it).

`python -m stages.candidate_labels DOMAIN` labels with the domain's `label_candidates`: for the
backend, a question that gets a new fact told, or an answer that passes every test, is good; for
the frontend, a page that renders closer to the target than the page before it. Reads params
`DOMAIN.simulator`, `DOMAIN.scoring` and `DOMAIN.tasks.source` (how answers are scored), the
training tasks, the offline rollouts and the candidates. Writes `data/DOMAIN/candidate_labels/`
(`labels.parquet`: state_id, candidate, kind, good; `manifest.json`) and
`reports/DOMAIN/stages/candidate_labels/metrics.json`. A domain without labels writes an empty
table and metrics that say so.
"""

from __future__ import annotations

import json

import polars as pl

from sweetflow.core.errors import run_stage
from sweetflow.core.tables import CANDIDATES, LABELS
from sweetflow.domain import get_domain
from sweetflow.rl.critic_quality import kind_shares
from sweetflow.stage import begin

LABELS_SCHEMA = {"state_id": pl.String, "candidate": pl.Int32, "kind": pl.String, "good": pl.Boolean}


def main() -> None:
    stage = begin("candidate_labels", __doc__)
    domain, params = stage.domain, stage.params
    (tasks_file, rollout), tasks = stage.offline_data()
    candidates_file = stage.upstream("candidates", file=CANDIDATES)
    inputs = [tasks_file, rollout, candidates_file]
    with stage.output(inputs) as out:
        labels = get_domain(domain).label_candidates(
            params.domain(domain), pl.read_parquet(candidates_file), pl.read_parquet(rollout), tasks
        )
        if labels is None:
            pl.DataFrame(schema=LABELS_SCHEMA).write_parquet(out.dir / LABELS)
            out.metrics.update(labelled=False)
        else:
            labels.cast(LABELS_SCHEMA).write_parquet(out.dir / LABELS)
            out.metrics.update(
                labelled=True,
                candidates=labels.height,
                states=labels["state_id"].n_unique(),
                good_share=round(float(labels["good"].mean()), 4) if labels.height else None,
                kind_shares=kind_shares(labels),
            )
    print(json.dumps(out.metrics, indent=2))


if __name__ == "__main__":
    run_stage(main)
