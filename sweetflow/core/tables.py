"""The tables the stages pass each other, as they read them.

- Tasks: one row per task of a split, as the `tasks@<domain>` stage checked them
  (`sweetflow.backend.tasks.table`, `sweetflow.frontend.tasks` hold each domain's schema).
- Trajectories: one row per (task, sample) episode, the dialogue nested, the reward: what every
  episode stage writes and every learning stage reads.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from sweetflow.core.definition import output_of
from sweetflow.core.domains import domain_module
from sweetflow.core.errors import InputError

# The files inside a stage's output that other code reads, named here for writer and readers alike;
# the output directories themselves are named once, in dvc.yaml (`Stage.upstream` reads them there).
TRAJECTORIES = "trajectories.parquet"  # the episodes of demos, rollout, evaluate and critic_check
SEED_TRAJECTORIES = "trajectories-seed{seed}.parquet"  # a checkpoint evaluation's episodes of one seed
EPISODE_FILES = "trajectories*.parquet"  # either: what an evaluation's directory holds
CANDIDATES = "candidates.parquet"  # candidates': the sampled candidates; rank's: with their scores
PAIRS = "pairs.parquet"  # trajectory_pairs' and step_pairs' preference pairs
LABELS = "labels.parquet"  # candidate_labels': each candidate's label
PICKED = "picked.parquet"  # critic_check's: each state's best and worst candidate
SCORED = "scored.parquet"  # critic_quality's: each labelled candidate with the critic's score


def task_file(split: str) -> str:
    """The task table of a split inside the `tasks` stage's output."""
    return f"{split}.parquet"


TURN = pl.Struct(
    {
        "role": pl.String,
        "content": pl.String,
        "prompt": pl.String,  # agent turns: the exact model input
        "raw": pl.String,  # agent turns: the raw model output
        "logprob_sum": pl.Float64,
        "logprob_mean": pl.Float64,
        "n_tokens": pl.Int64,
    }
)


TRAJECTORY_SCHEMA = pl.Schema(
    {
        "task_id": pl.String,
        "sample": pl.Int32,
        "seed": pl.Int64,
        "dialogue": pl.List(TURN),
        "answer": pl.String,
        "answered": pl.Boolean,  # the agent used the answer marker (protocol followed)
        "ended_by": pl.String,  # "answer", "max_turns", "context" (the dialogue filled the model's context); null if failed  # noqa: E501
        "n_turns": pl.Int32,  # agent turns
        # The turn limit the agent was told (`episodes.max_turns` of the run that played it), which
        # rebuilding its prompts (`sweetflow.views`) reads here; null in an import that knows none
        "max_turns": pl.Int32,
        "reward": pl.Float64,  # backend: fraction of tests passed; frontend: similarity to the target
        "success": pl.Boolean,  # backend: every test passed; frontend: null
        "score_status": pl.String,  # backend: the sandbox's status; frontend: rendered, no_html or render_failed
        "failure": pl.String,  # why the episode could not be completed, or null
        # backend: each hidden test's output (plain-data JSON, cut to OUTPUT_CHARS; null where the call
        # raised), for reading what an answer got wrong beside the task's `expected`; frontend: null
        "test_outputs": pl.List(pl.String),
    }
)


OUTPUT_CHARS = 200  # a stored test output's length: enough to read, cheap for thousands of episodes


def to_frame(records: list[dict]) -> pl.DataFrame:
    """The records as a trajectory table; keys beyond TRAJECTORY_SCHEMA (a domain's `Score.extra`)
    become Float64 columns after it."""
    extra = dict.fromkeys(k for r in records for k in r if k not in TRAJECTORY_SCHEMA)
    return pl.DataFrame(records, schema={**TRAJECTORY_SCHEMA, **dict.fromkeys(extra, pl.Float64)}, orient="row")


def trajectory_key(task_id: str, sample: int) -> str:
    return f"{task_id}:{sample}"


def dialogues_by_trajectory(trajectories: pl.DataFrame) -> dict[tuple[str, int], list[dict]]:
    """Each trajectory's dialogue, by (task_id, sample)."""
    return {(t, s): d for t, s, d in trajectories.select("task_id", "sample", "dialogue").iter_rows()}


def turn_limits_by_trajectory(trajectories: pl.DataFrame) -> dict[tuple[str, int], int]:
    """Each trajectory's turn limit (the `max_turns` its agent was told), by (task_id, sample)."""
    return {(t, s): n for t, s, n in trajectories.select("task_id", "sample", "max_turns").iter_rows()}


def turn_limit(trajectories: pl.DataFrame, where: object) -> int:
    """The one turn limit every trajectory of `trajectories` was played with; an InputError naming
    `where` if they differ or none is recorded."""
    limits = trajectories["max_turns"].unique().to_list()
    if len(limits) != 1 or limits[0] is None:
        raise InputError(f"{where}: expected one recorded turn limit (max_turns) for every trajectory, got {limits}")
    return limits[0]


def read_parquet(path: Path | str, columns: list[str] | None = None) -> pl.DataFrame:
    """A table one stage wrote for another; a truncated or corrupt file (or a missing column) is an
    InputError naming it, in one line."""
    try:
        return pl.read_parquet(path, columns=columns)
    except (pl.exceptions.PolarsError, OSError) as e:
        problem = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
        raise InputError(
            f"{path}: cannot be read as a Parquet table ({problem}); `dvc checkout` restores a stage's "
            "outputs from DVC's cache, or rerun the stage that writes it"
        ) from None


def read_tasks(domain: str, split: str) -> list[dict]:
    """The checked task table of a domain's split, as records, each with its `domain` (which the
    views of its episodes carry)."""
    path = output_of("tasks", domain, file=task_file(split))
    if not path.exists():
        raise FileNotFoundError(f"{path}: task table not found (run the `tasks@{domain}` stage first)")
    return [{**task, "domain": domain} for task in read_parquet(path).to_dicts()]


@dataclass
class TaskSet:
    """A domain's checked tasks, as the `tasks@<domain>` stage writes them."""

    splits: dict[str, pl.DataFrame]  # "train", "test": one row per task, every reference or target checked
    inputs: list[Path] = field(default_factory=list)  # files the tasks were read from (official JSONL, a corpus)
    metrics: dict = field(default_factory=dict)  # tasks and flagged references by kind, per split


def task_builder(domain: str) -> Callable[..., TaskSet]:
    """How `domain` makes its tasks (stage `tasks@<domain>`): `build_tasks(p, limits)` of `sweetflow.<domain>.build`,
    given the domain's section of params.yaml and the bounds on the files it reads (`inputs`)."""
    return domain_module(domain, "build").build_tasks


def split_off_validation(train: list[dict], n_val: int, where: str) -> tuple[list[dict], list[dict]]:
    """(train, val): the last `n_val` of the training tasks are the validation split."""
    if not n_val:
        return train, []
    if len(train) <= n_val:
        raise InputError(f"{where}: {len(train)} training tasks, too few for tasks.n_val={n_val} and a training split")
    return train[:-n_val], train[-n_val:]


def flag_counts(flags: list[list[str]], kinds: tuple[str, ...]) -> dict:
    """Tasks, flagged tasks, and each kind of flag, of one split."""
    counted = Counter(f for fs in flags for f in fs)
    return {
        "tasks": len(flags),
        "flagged": sum(bool(fs) for fs in flags),
        **{f"flag_{k}": counted.get(k, 0) for k in kinds},
    }
