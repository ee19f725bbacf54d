"""Benchmark: the sandbox's scoring throughput, this tree's against another tree's (e.g. main's).

The jobs are what scoring runs: each real ColBench row's reference as the code, its test cases as the
calls, repeated (100 rows x 5 = 500 jobs by default), through a pool of `--workers` workers started
inside the timing. Each round runs both trees once, each in a fresh process that imports its tree's
sandbox, in alternating order (paired runs on a shared, noisy machine); the table gives the median
seconds of each and the median of the per-round ratios. Both trees must give the same outputs.

Prints a table and writes bench/results/sandbox_throughput.json. Usage:
    python bench/sandbox_throughput.py --against /path/to/main-checkout [--rounds 5] [--repeat 5] [--workers 0]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_ROWS = ROOT / "tests" / "data" / "colbench-sample" / "backend_test_first100.jsonl"
RESULTS = ROOT / "bench" / "results" / "sandbox_throughput.json"

# Run in a fresh interpreter with PYTHONPATH set to the tree under test: time one pool over the jobs.
ONE_RUN = """
import hashlib, json, sys, time
from sweetflow.backend.sandbox.pool import Job, Sandbox
from sweetflow.params import load_params

rows_path, repeat, workers, params_path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
rows = [json.loads(line) for line in open(rows_path) if line.strip()]
jobs = [Job(row["ground_truth"], row["test_cases"]) for row in rows] * repeat
params = load_params(params_path).backend.scoring.model_copy(update={"workers": workers})
start = time.perf_counter()
with Sandbox(params) as sandbox:
    runs = sandbox.run(jobs)
seconds = time.perf_counter() - start
outputs = hashlib.sha1(json.dumps([[r.status, r.outputs] for r in runs]).encode()).hexdigest()
print(json.dumps({"seconds": seconds, "outputs": outputs, "ok": sum(r.status == "ok" for r in runs)}))
"""


def one_run(tree: Path, rows: Path, repeat: int, workers: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    command = [sys.executable, "-c", ONE_RUN, str(rows), str(repeat), str(workers), str(ROOT / "params.yaml")]
    out = subprocess.run(command, env=env, cwd=tree, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    from sweetflow.core.artifacts import machine

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--against", type=Path, required=True, help="the other tree (a checkout of main)")
    parser.add_argument("--tree", type=Path, default=ROOT, help="the tree under test (default: this checkout)")
    parser.add_argument("--rounds", type=int, default=5, help="paired rounds (default: 5)")
    parser.add_argument("--repeat", type=int, default=5, help="times each row is repeated (default: 5)")
    parser.add_argument("--rows", type=Path, default=DEFAULT_ROWS, help="ColBench backend JSONL")
    parser.add_argument("--workers", type=int, default=0, help="sandbox workers; 0: one per core")
    args = parser.parse_args(argv)
    console = Console()
    trees = {"this tree": args.tree.resolve(), "against": args.against.resolve()}
    n = sum(1 for line in args.rows.open() if line.strip()) * args.repeat
    runs: dict[str, list[dict]] = {name: [] for name in trees}
    for i in range(args.rounds):
        order = list(trees) if i % 2 == 0 else list(reversed(trees))
        for name in order:
            runs[name].append(one_run(trees[name], args.rows, args.repeat, args.workers))
        times = ", ".join(f"{k} {runs[k][-1]['seconds']:.2f} s" for k in trees)
        console.print(f"round {i + 1}/{args.rounds}: {times}")
    ratios = [a["seconds"] / b["seconds"] for a, b in zip(runs["this tree"], runs["against"])]
    summary = {
        name: {
            "median_seconds": statistics.median(r["seconds"] for r in rs),
            "jobs_per_s": n / statistics.median(r["seconds"] for r in rs),
            "seconds": [r["seconds"] for r in rs],
            "ok_jobs": rs[0]["ok"],
        }
        for name, rs in runs.items()
    }
    agree = len({r["outputs"] for rs in runs.values() for r in rs}) == 1

    table = Table(title=f"Sandbox throughput: {n} jobs, {args.rounds} paired rounds")
    for column in ("tree", "median s", "jobs/s", "ok jobs"):
        table.add_column(column, justify="left" if column == "tree" else "right")
    for name, s in summary.items():
        row = (f"{name} ({trees[name]})", f"{s['median_seconds']:.2f}", f"{s['jobs_per_s']:.0f}", str(s["ok_jobs"]))
        table.add_row(*row)
    console.print(table)
    console.print(f"median time ratio (this tree / against): {statistics.median(ratios):.3f}")
    console.print("outputs agree" if agree else "[red]outputs DISAGREE[/]")

    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    report = {
        "rows": str(args.rows),
        "jobs": n,
        "rounds": args.rounds,
        "workers": args.workers,
        "machine": machine(),
        "python": sys.version.split()[0],
        "trees": {k: str(v) for k, v in trees.items()},
        "summary": summary,
        "time_ratios": ratios,
        "median_time_ratio": statistics.median(ratios),
        "outputs_agree": agree,
    }
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    console.print(f"wrote {RESULTS}")
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
