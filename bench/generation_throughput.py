"""Benchmark: episodes per second of the `transformers` agent backend by batch size and threads.

The policy is the default DAG's base model (`models/backend/base`; run `dvc repro base_model@backend`
first), playing the first `--tasks` backend training tasks `--samples` times each against the
scripted human, as the `rollout` stage does: every live episode's turn is generated in chunks of
`batch_size`, each chunk a left-padded batch whose finished rows leave as they stop. The baseline
is a batch of 32 rows (the library's default before the base agent's 128) on the same threads. Every configuration
plays the same episodes (per-episode sampling seeds): the table also checks that their rewards agree.

Prints a table and writes bench/results/generation_throughput.json. Usage:
    python bench/generation_throughput.py [--tasks 128] [--samples 3] [--batch-sizes 32 128 256] [--threads 1 2]
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from pathlib import Path

import torch
from rich.console import Console
from rich.table import Table

from sweetflow.agents.model import open_model_agent
from sweetflow.core.artifacts import machine
from sweetflow.core.tables import read_tasks
from sweetflow.params import load_params
from sweetflow.rollout.engine import collect

ROOT = Path(__file__).resolve().parent.parent
CHECKPOINT = ROOT / "models/backend/base"
RESULTS = ROOT / "bench" / "results" / "generation_throughput.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=128)
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[32, 128, 256])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    if not (CHECKPOINT / "config.json").exists():
        raise SystemExit(f"{CHECKPOINT}: no checkpoint; run `dvc repro base_model@backend` first")
    params = load_params()
    tasks = read_tasks("backend", "train")[: args.tasks]
    baseline_size = 32
    rows = []
    for threads in args.threads:
        for batch_size in dict.fromkeys([baseline_size, *args.batch_sizes]):
            policy = params.agents["base"].model_copy(
                update={"checkpoint": str(CHECKPOINT), "threads": threads, "batch_size": batch_size}
            )
            with open_model_agent(policy) as agent, tempfile.TemporaryDirectory() as tmp:
                started = time.perf_counter()
                frame = collect(tasks, agent, params, "backend", args.samples, 0, Path(tmp) / "progress.jsonl", "bench")
                seconds = time.perf_counter() - started
            rows.append(
                {
                    "threads": threads,
                    "batch_size": batch_size,
                    "episodes": frame.height,
                    "seconds": round(seconds, 2),
                    "episodes_per_s": round(frame.height / seconds, 2),
                    "mean_reward": round(float(frame["reward"].mean()), 4),
                }
            )
    for row in rows:
        base = next(r for r in rows if r["threads"] == row["threads"] and r["batch_size"] == baseline_size)
        row["ratio_to_baseline"] = round(row["episodes_per_s"] / base["episodes_per_s"], 2)

    table = Table(title=f"Episodes/s of the tiny base policy: {args.tasks} tasks × {args.samples} samples")
    for column in ("threads", "batch_size", "seconds", "episodes_per_s", f"× batch {baseline_size}", "mean reward"):
        table.add_column(column, justify="right")
    keys = ("threads", "batch_size", "seconds", "episodes_per_s", "ratio_to_baseline", "mean_reward")
    for r in rows:
        table.add_row(*(str(r[k]) for k in keys))
    Console().print(table)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "tasks": args.tasks,
                "samples": args.samples,
                "machine": machine(),
                "python": platform.python_version(),
                "torch": torch.__version__,
                "results": rows,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
