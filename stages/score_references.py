"""Stage `score_references@<domain>`: score each test task's reference as if it were an agent's answer.

The benchmark's sanity check and the ceiling of every method.
- backend: each reference runs in the sandbox against its own tests; generated references must pass
  them all (`tests_passed`, `success_rate` of 1).
- frontend: each target page is rendered again and compared with its stored screenshot: the renderer
  and the similarity agree with themselves (`similarity` of 1), and the reference wins every task.

`python -m stages.score_references DOMAIN` reads params `DOMAIN.scoring` and the test tasks; writes
`data/DOMAIN/evaluations/reference/` (`scores.parquet`, `manifest.json`) and
`reports/DOMAIN/reference/metrics.json`.
"""

from __future__ import annotations

import json

import polars as pl

from sweetflow.core.errors import run_stage
from sweetflow.core.tables import read_tasks, task_file
from sweetflow.domain import get_domain
from sweetflow.rollout.metrics import summarize_episodes
from sweetflow.stage import begin


def main() -> None:
    stage = begin("score_references", __doc__)
    domain, params = stage.domain, stage.params
    tasks = read_tasks(domain, "test")
    table = stage.upstream("tasks", file=task_file("test"))
    with stage.output([table]) as out:
        with get_domain(domain).open(params.domain(domain)) as runtime:
            scores = runtime.score(tasks, [t["ground_truth"] for t in tasks])
        frame = pl.DataFrame(
            {
                "task_id": [t["task_id"] for t in tasks],
                "reward": [s.reward for s in scores],
                "success": [s.success for s in scores],
                "score_status": [s.status for s in scores],
                "n_turns": [0] * len(tasks),
                "answered": [True] * len(tasks),
                "ended_by": ["answer"] * len(tasks),
                "failure": [None] * len(tasks),
            },
            schema_overrides={"success": pl.Boolean, "failure": pl.String},
        )
        frame.write_parquet(out.dir / "scores.parquet")
        metrics = summarize_episodes(frame, domain, tasks)
        episode_only = ("mean_turns", "protocol_followed", "context_full", "failures")
        out.metrics.update({k: v for k, v in metrics.items() if k not in episode_only})
        out.metrics["statuses"] = dict(frame["score_status"].value_counts().iter_rows())
    print(json.dumps(out.metrics, indent=2))


if __name__ == "__main__":
    run_stage(main)
