"""Paired two-level bootstrap intervals for the difference between two methods.

Both methods ran on the same test tasks, so the comparison is paired by task: each task's outcome of
method A minus that of method B, averaged over tasks. Each method ran at one or more training seeds,
each a training of its own, and a seed's outcome on a task is its mean over that seed's samples. The
difference averages each method's seeds, and its interval counts both sources of variance: every
resample draws the tasks with replacement (one draw for both methods: the pairing) and, for each
method on its own, its seeds with replacement (seed k of one method and seed k of another are
separate training runs, not a pair). With one seed a method, this is the task bootstrap. Seeds that
disagree widen the interval, as they should: two trainings that land on opposite sides of the other
method do not show that one method is better, however many tasks each was tested on.
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
# What each interval resamples, as the report and the record say it.
RESAMPLED = "tasks and each method's training seeds"

# A method's outcomes: each training seed (or evaluation run) by name, and its mean per task.
SeedTaskMeans = dict[str, dict[str, float]]


@dataclass(frozen=True)
class Interval:
    """A − B in fractions: the mean difference over tasks and seeds, and its percentile bootstrap interval."""

    a: str
    b: str
    difference: float
    low: float
    high: float
    tasks: int
    level: float
    measure: str = ""  # what is compared: "success", "similarity", "win rate"
    seeds_a: int = 1  # how many training seeds each side's mean and resampling had
    seeds_b: int = 1

    @property
    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0


def task_means(frame: pl.DataFrame, column: str) -> dict[str, float]:
    """Each task's mean of `column` over its episodes (every sample of one seed)."""
    means = frame.group_by("task_id").agg(pl.col(column).cast(pl.Float64).mean())
    return dict(zip(means["task_id"].to_list(), means[column].to_list()))


def wins(frame: pl.DataFrame, column: str, reference: dict[str, float]) -> pl.DataFrame:
    """`column` replaced by each episode's win against its task's reference score: 1, a tie 0.5, 0."""
    ref = pl.col("task_id").replace_strict(reference, return_dtype=pl.Float64)
    win = pl.when(pl.col(column) > ref).then(1.0).when(pl.col(column) == ref).then(0.5).otherwise(0.0)
    return frame.with_columns(win.alias(column))


def read_seed_task_means(
    files: list[Path], column: str, reference: dict[str, float] | None = None
) -> SeedTaskMeans | None:
    """Task means of a method, one entry per episode file (a seed's `trajectories-seed<k>.parquet`, or a reference
    agent's one file), named by the file's stem; with `reference`: of its wins against it. None without files."""
    if not files:
        return None
    means = {}
    for f in sorted(files):
        frame = pl.read_parquet(f, columns=["task_id", column])
        means[f.stem] = task_means(frame if reference is None else wins(frame, column, reference), column)
    return means


def paired_bootstrap(
    a: SeedTaskMeans,
    b: SeedTaskMeans,
    names: tuple[str, str] = ("a", "b"),
    resamples: int = 10_000,
    level: float = 0.95,
    seed: int = 0,
) -> Interval:
    """The interval of A − B (each method's mean over its seeds, then over tasks), by resampling tasks (paired) and
    each method's seeds (independently) with replacement."""
    tasks = _common_tasks(a, b, names)
    A, B = (np.array([[m[s][t] for t in tasks] for s in sorted(m)]) for m in (a, b))  # seeds × tasks
    rng = np.random.default_rng(seed)
    drawn_tasks = rng.integers(
        0, len(tasks), size=(resamples, len(tasks))
    )  # first: one seed each is the task bootstrap
    per_task = _resampled_seed_means(A, rng, resamples) - _resampled_seed_means(B, rng, resamples)
    means = np.take_along_axis(per_task, drawn_tasks, axis=1).mean(axis=1)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    difference = float((A.mean(axis=0) - B.mean(axis=0)).mean())
    return Interval(names[0], names[1], difference, float(low), float(high), len(tasks), level, "", len(A), len(B))


def _resampled_seed_means(outcomes: np.ndarray, rng: np.random.Generator, resamples: int) -> np.ndarray:
    """resamples × tasks: each resample's mean over its draw of the seeds (rows of `outcomes`) with replacement."""
    seeds = len(outcomes)
    if seeds == 1:
        return np.broadcast_to(outcomes, (resamples, outcomes.shape[1]))
    drawn = rng.integers(0, seeds, size=(resamples, seeds))
    weights = (drawn[:, :, None] == np.arange(seeds)).mean(axis=1)  # how often each seed was drawn
    return weights @ outcomes


def _common_tasks(a: SeedTaskMeans, b: SeedTaskMeans, names: tuple[str, str]) -> list[str]:
    """The tasks every seed of both methods ran; an error naming the seed that differs."""
    if not a or not b:
        raise InputError(f"{names[0]} and {names[1]}: no seeds to compare")
    seeds = [(names[0], s, m) for s, m in a.items()] + [(names[1], s, m) for s, m in b.items()]
    tasks = set(seeds[0][2])
    for name, s, m in seeds[1:]:
        if m.keys() != tasks:
            only = sorted(tasks ^ m.keys())
            raise InputError(
                f"{names[0]} and {names[1]} were evaluated on different tasks: {name}'s {s} differs from "
                f"{seeds[0][0]}'s {seeds[0][1]}, e.g. {only[:3]}"
            )
    if not tasks:
        raise InputError(f"{names[0]} and {names[1]}: no tasks to compare")
    return sorted(tasks)


def method_intervals(
    evaluations: Path,
    column: str,
    comparisons=COMPARISONS,
    measure: str | None = None,
    reference: dict[str, float] | None = None,
) -> list[Interval]:
    """Every comparison whose two methods have been evaluated under `evaluations/<method>/`, of their
    `column` or, given each task's `reference` score, of their wins against it."""
    means = {
        m: read_seed_task_means(list((evaluations / m).glob(EPISODE_FILES)), column, reference)
        for pair in comparisons
        for m in pair
    }
    return [
        replace(paired_bootstrap(means[a], means[b], (a, b)), measure=measure or column)
        for a, b in comparisons
        if means[a] is not None and means[b] is not None
    ]
