"""The backend task table: one row per task, stored as Parquet with an explicit schema."""

from __future__ import annotations

from pathlib import Path

import polars as pl

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
    df = pl.read_parquet(path, columns=columns)
    missing = [c for c in (columns or CHECKED_SCHEMA) if c not in df.columns]
    if missing:
        raise ValueError(f"{path}: not a checked task table, missing columns {missing}")
    return df
