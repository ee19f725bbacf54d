"""Stage `tasks@<domain>`: generate (or import) a domain's tasks and check every reference.

`python -m stages.tasks DOMAIN` reads params `DOMAIN.tasks` and `DOMAIN.scoring` (what checking
needs) and `inputs` (the bounds on a ColBench file it imports), and writes `data/DOMAIN/tasks/`
(`train.parquet`, `test.parquet`, `manifest.json`) and `reports/DOMAIN/stages/tasks/metrics.json`
(tasks and flagged references, by kind).

- backend: every reference runs twice in the sandbox; its outputs become the expected outputs;
  references that fail, time out, are nondeterministic, return None or values unequal to themselves
  are flagged. For LLM-written tasks, rejections by reason.
- frontend: every target page is rendered twice; its screenshot is stored with the task, pages
  that fail or render differently are flagged; the page made from the description alone is scored
  as each task's reference.
"""

from __future__ import annotations

import polars as pl

from sweetflow.core.errors import run_stage
from sweetflow.core.tables import task_builder, task_file
from sweetflow.stage import begin


def main() -> None:
    stage = begin("tasks", __doc__)
    d = stage.params.domain(stage.domain)
    built = task_builder(stage.domain)(d, stage.params.inputs)
    with stage.output(built.inputs, d.tasks.seed) as out:
        for split, table in built.splits.items():
            table.write_parquet(out.dir / task_file(split))
        out.metrics.update(built.metrics)
    print(pl.DataFrame([{"split": k, **v} for k, v in built.metrics.items() if k in built.splits]))


if __name__ == "__main__":
    run_stage(main)
