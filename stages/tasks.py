"""Stage `tasks`: generate (or import) backend tasks and record each reference's outputs.

Reads params sections `tasks` and `sandbox`; writes `data/tasks/` with `train.parquet`,
`test.parquet` and `manifest.json`, and `reports/tasks/metrics.json` (references flagged, by kind;
for LLM-written tasks, rejections by reason).
"""

from __future__ import annotations

from collections import Counter

import polars as pl

from sweetflow.artifacts import stage_output
from sweetflow.errors import StageFailed, run_stage
from sweetflow.params import TasksParams, load_params
from sweetflow.sandbox import Sandbox
from sweetflow.scoring import FLAGS, check_references
from sweetflow.tasks import colbench, llm, procedural
from sweetflow.tasks.table import CHECKED_SCHEMA, to_frame

OUT = "data/tasks"
METRICS = "reports/tasks/metrics.json"


def load_tasks(p: TasksParams, sandbox: Sandbox, metrics: dict) -> tuple[list[dict], list[dict], list]:
    """(train, test, input files) from the source the params name."""
    if p.source == "procedural":
        train, test = procedural.generate_tasks(p.n_train, p.n_test, p.seed, p.families, progress=True)
        return train, test, []
    if p.source == "colbench":
        test = colbench.read_backend_jsonl(p.colbench_test, limit=p.colbench_test_rows)
        train = colbench.read_backend_jsonl(p.colbench_train) if p.colbench_train else []
        return train, test, [path for path in (p.colbench_test, p.colbench_train) if path]
    seen: set[str] = set()
    splits = {}
    for split, n in (("test", p.n_test), ("train", p.n_train)):
        result = llm.generate_llm_tasks(n, p.llm, sandbox, seen, desc=f"writing {split} tasks")
        metrics[f"llm_{split}"] = {"requests": result.requests, "kept": len(result.tasks), **result.rejected}
        if len(result.tasks) < n:
            raise StageFailed(
                f"the LLM wrote {len(result.tasks)} usable {split} tasks of {n} in {result.requests} requests "
                f"(tasks.llm.max_requests); rejected: {dict(result.rejected)}"
            )
        splits[split] = result.tasks
    return splits["train"], splits["test"], [p.llm.corpus]


def main() -> None:
    params = load_params()
    p = params.tasks
    sections = {"tasks": p, "sandbox": params.sandbox}
    metrics: dict = {}
    with Sandbox(params.sandbox) as sandbox:
        train, test, inputs = load_tasks(p, sandbox, metrics)
        with stage_output(OUT, "tasks", sections, inputs, p.seed, METRICS) as out:
            out.metrics.update(metrics)
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
    print(pl.DataFrame([{"split": k, **v} for k, v in out.metrics.items() if k in ("train", "test")]))


if __name__ == "__main__":
    run_stage(main)
