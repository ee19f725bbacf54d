"""Stage `tasks`: generate (or import) backend tasks and record each reference's outputs.

Reads params sections `tasks` and `sandbox`; writes `data/tasks/` with `train.parquet`,
`test.parquet` and `manifest.json`, and `reports/tasks/metrics.json` (references flagged, by kind).
"""

from __future__ import annotations

from collections import Counter

import polars as pl

from sweetflow.artifacts import stage_output
from sweetflow.errors import run_stage
from sweetflow.params import load_params
from sweetflow.sandbox import Sandbox
from sweetflow.scoring import FLAGS, check_references
from sweetflow.tasks import colbench, procedural
from sweetflow.tasks.table import CHECKED_SCHEMA, to_frame

OUT = "data/tasks"
METRICS = "reports/tasks/metrics.json"


def main() -> None:
    params = load_params()
    p = params.tasks
    inputs = []
    if p.source == "procedural":
        train, test = procedural.generate_tasks(p.n_train, p.n_test, p.seed, p.families, progress=True)
    else:
        test = colbench.read_backend_jsonl(p.colbench_test, limit=p.colbench_test_rows)
        train = colbench.read_backend_jsonl(p.colbench_train) if p.colbench_train else []
        inputs += [path for path in (p.colbench_test, p.colbench_train) if path]

    sections = {"tasks": p, "sandbox": params.sandbox}
    with stage_output(OUT, "tasks", sections, inputs, p.seed, METRICS) as out, Sandbox(params.sandbox) as sandbox:
        for split, tasks in (("train", train), ("test", test)):
            checks = check_references(tasks, sandbox, desc=f"references ({split})")
            rows = [
                {**t, "split": split, "expected": c.expected, "reference_passes": c.reference_passes, "flags": c.flags}
                for t, c in zip(tasks, checks)
            ]
            to_frame(rows, CHECKED_SCHEMA).write_parquet(out.dir / f"{split}.parquet")
            flagged = Counter(f for c in checks for f in c.flags)
            out.metrics[split] = {
                "tasks": len(tasks),
                "flagged": sum(bool(c.flags) for c in checks),
                **{f"flag_{name}": flagged.get(name, 0) for name in FLAGS},
            }
        out.metrics["sandbox_isolation"] = sandbox.isolation
    print(pl.DataFrame([{"split": k, **v} for k, v in out.metrics.items() if isinstance(v, dict)]))


if __name__ == "__main__":
    run_stage(main)
