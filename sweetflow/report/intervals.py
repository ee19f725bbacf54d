"""Paired task-bootstrap intervals for the difference between two methods.

Both methods ran on the same test tasks, so the comparison is paired by task: each task's outcome
(its mean over seeds and samples) of method A minus that of method B, averaged over tasks. The
interval resamples tasks with replacement, which keeps the variance that comes from which tasks
the test set happens to hold; seeds and samples stay inside each task's mean.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import polars as pl

from sweetflow.core.errors import InputError
from sweetflow.core.tables import EPISODE_FILES

# The method pairs the report resolves, (A, B): A − B.
COMPARISONS = (("sweet", "mtdpo"), ("sweet", "rft"), ("sweet", "sweet_no_info"), ("sweet", "zero_shot"))


@dataclass(frozen=True)
class Interval:
    """A − B in fractions: the mean difference over tasks and its percentile bootstrap interval."""

    a: str
    b: str
    difference: float
    low: float
    high: float
    tasks: int
    level: float
    measure: str = ""  # what is compared: "success", "similarity", "win rate"

    @property
    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0


def task_means(frame: pl.DataFrame, column: str) -> dict[str, float]:
    """Each task's mean of `column` over its episodes (every seed and sample)."""
    means = frame.group_by("task_id").agg(pl.col(column).cast(pl.Float64).mean())
    return dict(zip(means["task_id"].to_list(), means[column].to_list()))


def wins(frame: pl.DataFrame, column: str, reference: dict[str, float]) -> pl.DataFrame:
    """`column` replaced by each episode's win against its task's reference score: 1, a tie 0.5, 0."""
    ref = pl.col("task_id").replace_strict(reference, return_dtype=pl.Float64)
    win = pl.when(pl.col(column) > ref).then(1.0).when(pl.col(column) == ref).then(0.5).otherwise(0.0)
    return frame.with_columns(win.alias(column))


def read_task_means(directory: Path, column: str, reference: dict[str, float] | None = None) -> dict[str, float] | None:
    """Task means of a method from its evaluation directory's trajectories*.parquet (with `reference`:
    of its wins against it); None if not run."""
    files = sorted(directory.glob(EPISODE_FILES))
    if not files:
        return None
    frame = pl.concat([pl.read_parquet(f, columns=["task_id", column]) for f in files])
    return task_means(frame if reference is None else wins(frame, column, reference), column)


def paired_bootstrap(
    a: dict[str, float],
    b: dict[str, float],
    names: tuple[str, str] = ("a", "b"),
    resamples: int = 10_000,
    level: float = 0.95,
    seed: int = 0,
) -> Interval:
    """The interval of mean(A − B) over tasks, by resampling tasks with replacement."""
    if a.keys() != b.keys():
        only = sorted(a.keys() ^ b.keys())
        raise InputError(f"{names[0]} and {names[1]} were evaluated on different tasks, e.g. {only[:3]}")
    if not a:
        raise InputError(f"{names[0]} and {names[1]}: no tasks to compare")
    tasks = sorted(a)
    d = np.array([a[t] - b[t] for t in tasks])
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, len(d), size=(resamples, len(d)))].mean(axis=1)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return Interval(names[0], names[1], float(d.mean()), float(low), float(high), len(d), level)


def method_intervals(
    evaluations: Path,
    column: str,
    comparisons=COMPARISONS,
    measure: str | None = None,
    reference: dict[str, float] | None = None,
) -> list[Interval]:
    """Every comparison whose two methods have been evaluated under `evaluations/<method>/`, of their
    `column` or, given each task's `reference` score, of their wins against it."""
    means = {m: read_task_means(evaluations / m, column, reference) for pair in comparisons for m in pair}
    return [
        replace(paired_bootstrap(means[a], means[b], (a, b)), measure=measure or column)
        for a, b in comparisons
        if means[a] is not None and means[b] is not None
    ]
