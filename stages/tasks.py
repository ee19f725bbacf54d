"""Stage `tasks@<domain>`: generate (or import) a domain's tasks and check every reference.

`python -m stages.tasks DOMAIN` reads params `DOMAIN.tasks` and what checking needs, and writes
`data/DOMAIN/tasks/` (`train.parquet`, `test.parquet`, `manifest.json`) and
`reports/DOMAIN/stages/tasks/metrics.json` (tasks and flagged references, by kind).

- backend (`backend.tasks`, `backend.sandbox`): every reference runs twice in the sandbox; its
  outputs become the expected outputs; references that fail, time out, are nondeterministic, return
  None or values unequal to themselves are flagged. For LLM-written tasks, rejections by reason.
- frontend (`frontend.tasks`, `frontend.render`, `frontend.similarity`): every target page is
  rendered twice; its screenshot is stored with the task, pages that fail or render differently
  are flagged; the page made from the description alone is scored as each task's reference.
"""

from __future__ import annotations

import argparse
from collections import Counter

import polars as pl

from sweetflow import paths
from sweetflow.artifacts import stage_output
from sweetflow.errors import StageFailed, run_stage
from sweetflow.params import Params, TasksParams, load_params

DOMAINS = ("backend", "frontend")


def load_backend_tasks(p: TasksParams, sandbox, metrics: dict) -> tuple[list[dict], list[dict], list]:
    """(train, test, input files) from the source the params name."""
    from sweetflow.tasks import colbench, llm, procedural

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


def backend(params: Params) -> dict:
    from sweetflow.sandbox import Sandbox
    from sweetflow.scoring import FLAGS, check_references
    from sweetflow.tasks.table import CHECKED_SCHEMA, to_frame

    p = params.backend
    metrics: dict = {}
    with Sandbox(p.scoring) as sandbox:
        train, test, inputs = load_backend_tasks(p.tasks, sandbox, metrics)
        sections = {"backend.tasks": p.tasks, "backend.scoring": p.scoring}
        with stage_output(paths.tasks("backend"), "tasks@backend", sections, inputs, p.tasks.seed,
                          paths.stage_metrics("backend", "tasks")) as out:  # fmt: skip
            out.metrics.update(metrics)
            for split, tasks in (("train", train), ("test", test)):
                checks = check_references(tasks, sandbox, desc=f"references ({split})")
                rows = [
                    {**t, "split": split, "expected": c.expected, "reference_passes": c.reference_passes, "flags": c.flags}
                    for t, c in zip(tasks, checks)
                ]
                to_frame(rows, CHECKED_SCHEMA).write_parquet(out.dir / f"{split}.parquet")
                out.metrics[split] = _flag_counts(len(tasks), [c.flags for c in checks], FLAGS)
            out.metrics["sandbox_isolation"] = sandbox.isolation
    return out.metrics


def frontend(params: Params) -> dict:
    from sweetflow.frontend import tasks as frontend_tasks
    from sweetflow.frontend.checks import FLAGS, check_targets
    from sweetflow.frontend.render import RenderPool
    from sweetflow.frontend.similarity import Similarity

    p = params.frontend
    if p.tasks.source == "procedural":
        train, test = frontend_tasks.generate_frontend_tasks(p.tasks.n_train, p.tasks.n_test, p.tasks.seed, progress=True)
        inputs = []
    else:
        test = frontend_tasks.read_frontend_jsonl(p.tasks.colbench_test, limit=p.tasks.colbench_test_rows)
        train = frontend_tasks.read_frontend_jsonl(p.tasks.colbench_train) if p.tasks.colbench_train else []
        inputs = [path for path in (p.tasks.colbench_test, p.tasks.colbench_train) if path]
    sections = {"frontend.tasks": p.tasks, "frontend.scoring": p.scoring}
    similarity = Similarity(p.scoring.similarity)
    with RenderPool(p.scoring.render) as pool, stage_output(
        paths.tasks("frontend"), "tasks@frontend", sections, inputs, p.tasks.seed, paths.stage_metrics("frontend", "tasks")
    ) as out:  # fmt: skip
        for split, tasks in (("train", train), ("test", test)):
            checks = check_targets(tasks, pool, similarity, desc=f"targets ({split})")
            rows = [
                {**t, "target_png": c.target_png, "reference_similarity": c.reference_similarity, "flags": c.flags}
                for t, c in zip(tasks, checks)
            ]
            table = frontend_tasks.to_frame(rows, split, frontend_tasks.CHECKED_FRONTEND_SCHEMA)
            table.write_parquet(out.dir / f"{split}.parquet")
            out.metrics[split] = _flag_counts(len(tasks), [c.flags for c in checks], FLAGS)
            if checks:
                out.metrics[split]["reference_similarity"] = round(sum(c.reference_similarity for c in checks) / len(checks), 4)
        out.metrics["similarity_metric"] = p.scoring.similarity.metric
    return out.metrics


def _flag_counts(n: int, flags: list[list[str]], kinds: tuple[str, ...]) -> dict:
    counted = Counter(f for fs in flags for f in fs)
    return {"tasks": n, "flagged": sum(bool(fs) for fs in flags), **{f"flag_{k}": counted.get(k, 0) for k in kinds}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("domain", choices=DOMAINS)
    domain = parser.parse_args().domain
    metrics = {"backend": backend, "frontend": frontend}[domain](load_params())
    print(pl.DataFrame([{"split": k, **v} for k, v in metrics.items() if k in ("train", "test")]))


if __name__ == "__main__":
    run_stage(main)
