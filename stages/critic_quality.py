"""Stage `critic_quality@<domain>-<critic>`: the SWEET-RL mechanism metrics of a critic, from labelled
candidates (sweetflow.rl.critic_quality).

`python -m stages.critic_quality DOMAIN CRITIC` labels every candidate action good or bad at its
state (the domain's `label_candidates`: for the backend, a question that gets a new fact told, or
an answer that passes every test, is good; for the frontend, a page that renders closer to the
target than the page before it) and measures the critic's good-vs-bad accuracy on them
and the make-up of its step pairs (the informative share: a good action chosen over a bad one).
Reads params `DOMAIN.simulator`, `DOMAIN.scoring` and `DOMAIN.tasks.source` (how answers are
scored), the training tasks, the offline rollouts, the candidates, and CRITIC's ranked candidates
and step pairs. Writes `data/DOMAIN/critic_quality/CRITIC/` (`labels.parquet`, `manifest.json`) and
`reports/DOMAIN/stages/critic_quality/CRITIC/metrics.json`. A domain without labels writes an
empty table and metrics that say so.
"""

from __future__ import annotations

import json

import polars as pl

from stages._common import begin
from sweetflow import paths
from sweetflow.artifacts import stage_output
from sweetflow.domain import get_domain
from sweetflow.errors import run_stage
from sweetflow.rl.critic_quality import good_vs_bad_accuracy, pair_makeup
from sweetflow.tables import read_tasks

LABELS_SCHEMA = {"state_id": pl.String, "candidate": pl.Int32, "kind": pl.String, "good": pl.Boolean}


def main() -> None:
    stage = begin("critic_quality", __doc__, item="critics")
    domain, name, params = stage.domain, stage.item, stage.params
    tasks_file, rollout = paths.task_table(domain, "train"), paths.trajectories(domain, "rollout")
    candidates_file = f"{paths.candidates(domain)}/candidates.parquet"
    ranked_file = f"{paths.ranked(domain, name)}/candidates.parquet"
    pairs_file = f"{paths.step_pairs(domain, name)}/pairs.parquet"
    d = getattr(params, domain)
    sections = {f"{domain}.simulator": d.simulator, f"{domain}.scoring": d.scoring,
                f"{domain}.tasks.source": d.tasks.source}  # fmt: skip
    inputs = [tasks_file, rollout, candidates_file, ranked_file, pairs_file]
    with stage_output(paths.critic_quality(domain, name), stage.name, sections, inputs, None,
                      paths.stage_metrics(domain, "critic_quality", name)) as out:  # fmt: skip
        tasks = {t["task_id"]: t for t in read_tasks(domain, "train")}
        labels = get_domain(domain).label_candidates(
            params, pl.read_parquet(candidates_file), pl.read_parquet(rollout), tasks
        )
        if labels is None:
            pl.DataFrame(schema=LABELS_SCHEMA).write_parquet(out.dir / "labels.parquet")
            out.metrics.update(labelled=False)
        else:
            labels.cast(LABELS_SCHEMA).write_parquet(out.dir / "labels.parquet")
            kinds = labels["kind"].value_counts().rows()
            out.metrics.update(
                labelled=True,
                **good_vs_bad_accuracy(pl.read_parquet(ranked_file), labels),
                **pair_makeup(pl.read_parquet(pairs_file), labels),
                kind_shares={k: round(c / labels.height, 4) for k, c in sorted(kinds)},
            )
    print(json.dumps(out.metrics, indent=2))


if __name__ == "__main__":
    run_stage(main)
