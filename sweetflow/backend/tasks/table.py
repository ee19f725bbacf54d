"""The backend task table: one row per task, stored as Parquet with an explicit schema."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from sweetflow.backend.params import SandboxParams, ScoringRules
from sweetflow.backend.scoring import ReferenceCheck
from sweetflow.core.artifacts import read_manifest
from sweetflow.core.errors import InputError
from sweetflow.core.tables import read_parquet

FACT = pl.Struct(
    {"parameter": pl.String, "topic": pl.String, "fact": pl.String, "value": pl.String, "guess": pl.String}
)

# Columns every task has, whatever its source. `facts` and `template` are empty for imported rows,
# which carry their hidden information as the reference itself (as ColBench does).
TASK_SCHEMA = pl.Schema(
    {
        "task_id": pl.String,
        "family": pl.String,
        "function_name": pl.String,
        "signature": pl.String,
        "problem_description": pl.String,
        "ground_truth": pl.String,
        "template": pl.String,
        "test_cases": pl.List(pl.String),
        "facts": pl.List(FACT),
    }
)

# Added by the tasks stage after running every reference in the sandbox.
CHECKED_SCHEMA = pl.Schema(
    {
        **TASK_SCHEMA,
        "split": pl.String,
        "expected": pl.List(pl.String),  # plain-data JSON of the reference's output per test; null if none
        "reference_passes": pl.Int32,  # tests the reference passes against its own expected outputs
        "flags": pl.List(pl.String),
    }
)


def to_frame(records: list[dict], schema: pl.Schema = TASK_SCHEMA) -> pl.DataFrame:
    return pl.DataFrame([{k: r.get(k) for k in schema} for r in records], schema=schema, orient="row")


def read_tasks(path: Path | str, columns: list[str] | None = None) -> pl.DataFrame:
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: task table not found (run the `tasks` stage first)")
    df = read_parquet(path, columns=columns)
    missing = [c for c in (columns or CHECKED_SCHEMA) if c not in df.columns]
    if missing:
        raise ValueError(f"{path}: not a checked task table, missing columns {missing}")
    return df


# The sandbox limits under which a reference's outputs were computed: with others, a call could time
# out or run out of memory where it did not (`workers` and `run_without_walls` change no output).
OUTPUT_LIMITS = (
    "call_timeout_s",
    "task_timeout_s",
    "cpu_s",
    "memory_mb",
    "file_size_mb",
    "open_files",
    "max_output_bytes",
)


def stored_references(path: Path | str, limits: SandboxParams, rules: ScoringRules) -> dict[str, ReferenceCheck]:
    """The reference checks a `tasks@backend` table stores (expected outputs, passes, flags), by task
    id, for scoring answers without running their references again. Only where the table's outputs
    are the ones these limits and rules would give: its manifest records the params it was made
    with, and any difference is an InputError naming the table and the setting. A nondeterministic
    reference is left out: the scorer runs it again, as it runs a task the table lacks."""
    path = Path(path)
    frame = read_tasks(path, ["task_id", "expected", "reference_passes", "flags"])
    try:
        made = read_manifest(path.parent)["params"]
        scoring, source = made["backend.scoring"], made["backend.tasks"]["source"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise InputError(
            f"{path}: no record of the params it was made with ({path.parent}/manifest.json: {e})"
        ) from None
    function = scoring.get("namespace") == "function" or (scoring.get("namespace") == "auto" and source == "colbench")
    differences = [
        (k, scoring.get(k), getattr(limits, k)) for k in OUTPUT_LIMITS if scoring.get(k) != getattr(limits, k)
    ]
    if function != rules.function_namespace:
        differences.append(("namespace", _namespace(function), _namespace(rules.function_namespace)))
    if differences:
        key, then, now = differences[0]
        raise InputError(
            f"{path}: its reference outputs were computed with backend.scoring.{key}={then}, this scoring uses "
            f"{now}; score without the table, or with the params it was made with"
        )
    return {
        task_id: ReferenceCheck(list(expected), passes, list(flags))
        for task_id, expected, passes, flags in frame.iter_rows()
        if "nondeterministic" not in flags
    }


def _namespace(function: bool) -> str:
    return "function" if function else "module"
