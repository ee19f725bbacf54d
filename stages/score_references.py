"""Stage `score_references`: score each test task's reference as if it were an agent's answer.

This is the benchmark's sanity check and the ceiling of every method: generated references must
pass all their tests. Writes `data/evaluations/reference/` (`scores.parquet`, `manifest.json`)
and `reports/backend/reference/metrics.json` (`tests_passed`, `success_rate`, count, sandbox
failures).
"""

from __future__ import annotations

import json

import polars as pl

from sweetflow.artifacts import stage_output
from sweetflow.errors import run_stage
from sweetflow.params import load_params
from sweetflow.sandbox import Sandbox
from sweetflow.scoring import score_answers, summarize
from sweetflow.tasks.table import read_tasks

TASKS = "data/tasks/test.parquet"
OUT = "data/evaluations/reference"
METRICS = "reports/backend/reference/metrics.json"


def main() -> None:
    params = load_params()
    tasks = read_tasks(TASKS, ["task_id", "ground_truth", "test_cases", "expected"])
    with stage_output(OUT, "score_references", {"sandbox": params.sandbox}, [TASKS], metrics=METRICS) as out:
        with Sandbox(params.sandbox) as sandbox:
            scores = score_answers(
                tasks["ground_truth"].to_list(),
                tasks["expected"].to_list(),
                tasks["test_cases"].to_list(),
                sandbox,
                desc="scoring references",
            )
        pl.DataFrame(
            {
                "task_id": tasks["task_id"],
                "tests_passed": [s.tests_passed for s in scores],
                "success": [s.success for s in scores],
                "status": [s.status for s in scores],
            }
        ).write_parquet(out.dir / "scores.parquet")
        out.metrics.update(summarize(scores))
    print(json.dumps(out.metrics, indent=2))


if __name__ == "__main__":
    run_stage(main)
