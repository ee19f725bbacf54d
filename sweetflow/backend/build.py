"""Making the backend's tasks (stage `tasks@backend`): generate, import or have an LLM write them,
then check every reference in the sandbox."""

from __future__ import annotations

from pathlib import Path

from sweetflow.backend.params import BackendParams, TasksParams
from sweetflow.backend.sandbox.pool import Sandbox
from sweetflow.backend.scoring import FLAGS, check_references
from sweetflow.backend.tasks import colbench, llm, procedural
from sweetflow.backend.tasks.table import CHECKED_SCHEMA, to_frame
from sweetflow.core.errors import StageFailed
from sweetflow.core.inputs import FileLimits
from sweetflow.core.tables import TaskSet, flag_counts, split_off_validation


def build_tasks(p: BackendParams, limits: FileLimits | None = None) -> TaskSet:
    """Every reference runs twice in the sandbox; its outputs become the expected outputs; references
    that fail, time out, are nondeterministic, return None or values unequal to themselves are
    flagged. For LLM-written tasks, rejections by reason."""
    with Sandbox(p.scoring) as sandbox:
        metrics: dict = {}
        train, test, inputs = load_tasks(p.tasks, sandbox, metrics, limits)
        train, val = split_off_validation(train, p.tasks.n_val, str(p.tasks.colbench_train or "backend.tasks"))
        splits = {}
        for split, tasks in (("train", train), ("val", val), ("test", test)):
            checks = check_references(tasks, sandbox, desc=f"references ({split})", rules=p.scoring_rules())
            rows = [
                {**t, "split": split, "expected": c.expected, "reference_passes": c.reference_passes, "flags": c.flags}
                for t, c in zip(tasks, checks)
            ]
            splits[split] = to_frame(rows, CHECKED_SCHEMA)
            metrics[split] = flag_counts([c.flags for c in checks], FLAGS)
        metrics["sandbox_isolation"] = sandbox.isolation
    return TaskSet(splits, inputs, metrics)


def load_tasks(
    p: TasksParams, sandbox: Sandbox, metrics: dict, limits: FileLimits | None = None
) -> tuple[list[dict], list[dict], list[Path]]:
    """(train, test, input files) from the source the params name, its files read within `limits`; train still holds
    the validation tasks."""
    if p.source == "procedural":
        train, test = procedural.generate_tasks(
            p.n_train + p.n_val, p.n_test, p.seed, p.families, progress=True, test_seed=p.test_seed
        )
        return train, test, []
    if p.source == "colbench":
        test = colbench.read_backend_jsonl(p.colbench_test, p.colbench_test_rows, limits)
        train = colbench.read_backend_jsonl(p.colbench_train, bounds=limits) if p.colbench_train else []
        return train, test, [path for path in (p.colbench_test, p.colbench_train) if path]
    seen: set[str] = set()
    splits = {}
    for split, n in (("test", p.n_test), ("train", p.n_train + p.n_val)):
        result = llm.generate_llm_tasks(n, p.llm, sandbox, seen, desc=f"writing {split} tasks")
        metrics[f"llm_{split}"] = {"requests": result.requests, "kept": len(result.tasks), **result.rejected}
        if len(result.tasks) < n:
            raise StageFailed(
                f"the LLM wrote {len(result.tasks)} usable {split} tasks of {n} in {result.requests} requests "
                f"(tasks.llm.max_requests); rejected: {dict(result.rejected)}"
            )
        splits[split] = result.tasks
    return splits["train"], splits["test"], [p.llm.corpus]
