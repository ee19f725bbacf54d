"""Making the frontend's tasks (stage `tasks@frontend`): generate or import them, then render every
target page to check it."""

from __future__ import annotations

from sweetflow.core.inputs import FileLimits
from sweetflow.core.tables import TaskSet, flag_counts, split_off_validation
from sweetflow.frontend.checks import FLAGS, check_targets
from sweetflow.frontend.params import FrontendParams
from sweetflow.frontend.render import RenderPool
from sweetflow.frontend.similarity import Similarity
from sweetflow.frontend.tasks import CHECKED_FRONTEND_SCHEMA, generate_frontend_tasks, read_frontend_jsonl, to_frame


def build_tasks(p: FrontendParams, limits: FileLimits | None = None) -> TaskSet:
    """Every target page is rendered twice; its screenshot is stored with the task, pages that fail
    or render differently are flagged; the page made from the description alone is scored as each
    task's reference."""
    if p.tasks.source == "procedural":
        train, test = generate_frontend_tasks(
            p.tasks.n_train + p.tasks.n_val, p.tasks.n_test, p.tasks.seed, progress=True, test_seed=p.tasks.test_seed
        )
        inputs = []
    else:
        test = read_frontend_jsonl(p.tasks.colbench_test, p.tasks.colbench_test_rows, limits)
        train = read_frontend_jsonl(p.tasks.colbench_train, bounds=limits) if p.tasks.colbench_train else []
        inputs = [path for path in (p.tasks.colbench_test, p.tasks.colbench_train) if path]
    train, val = split_off_validation(train, p.tasks.n_val, str(p.tasks.colbench_train or "frontend.tasks"))
    similarity = Similarity(p.scoring.similarity)
    splits, metrics = {}, {"similarity_metric": p.scoring.similarity.metric}
    with RenderPool(p.scoring.render) as pool:
        for split, tasks in (("train", train), ("val", val), ("test", test)):
            checks = check_targets(tasks, pool, similarity, desc=f"targets ({split})")
            rows = [
                {
                    **t,
                    "target_png": c.target_png,
                    "reference_similarity": c.reference_similarity,
                    "reference_design": c.reference_design,
                    "flags": c.flags,
                }
                for t, c in zip(tasks, checks)
            ]
            splits[split] = to_frame(rows, split, CHECKED_FRONTEND_SCHEMA)
            metrics[split] = flag_counts([c.flags for c in checks], FLAGS)
            if checks:
                for key in ("reference_similarity", "reference_design"):
                    metrics[split][key] = round(sum(getattr(c, key) for c in checks) / len(checks), 4)
    return TaskSet(splits, inputs, metrics)
