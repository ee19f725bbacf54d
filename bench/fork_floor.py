"""Benchmark: what one fresh process per answer costs at least, against the in-process evaluator's row.

The sandbox runs every answer in a child forked from a template that never held an answer (issue:
no answer in another's memory). Whatever else it does, each answer then costs a fork, the pages the
child writes (copied from the template) and the child's exit. This measures those floors in one run,
in alternating rounds, each in a process of its own timing a loop of `--forks` forks:

  (a) the anchor: ColBench's evaluator in process (`score_throughput.anchor_successes`: each row's
      reference and answer exec'd and every test call eval'd here), per row;
  (b) fork and exit of a bare interpreter (`python -I -S`: no site, nothing imported);
  (c) fork and exit of the sandbox's template (the worker module imported, `gc.freeze()` as it does);
  (d) as (c), the child running a row's reference as the answer (compile, exec, each test call
      encoded with plaindata), the sample's rows in turn.

Each is a single process on one core, so its wall time is its CPU. The scorer reaches half the
anchor's pace on C cores only if an answer costs at most 2 x C x (a) of CPU in all; (d) is a part of
that cost no sandbox that forks per answer avoids, and the table says how much of the budget it takes.
Writes bench/results/fork_floor.json.

    python bench/fork_floor.py [--forks 1000] [--rounds 5] [--rows PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table
from score_throughput import DEFAULT_ROWS, anchor_successes

from sweetflow.backend.tasks.colbench import task_from_row
from sweetflow.core.artifacts import machine
from sweetflow.core.inputs import iter_jsonl

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "fork_floor.json"

# Runs in a process of its own: argv[1] forks, argv[2] "bare", "template" or the JSON rows file.
LOOP = """
import os, sys, time
n, what = int(sys.argv[1]), sys.argv[2]
if what != "bare":
    import gc, json
    import sweetflow.backend.sandbox.worker  # the template's image: what every child is forked from
    from sweetflow.backend.sandbox import plaindata
    rows = json.load(open(what)) if what != "template" else []
    def answer(row):
        namespace, local = {"__builtins__": __builtins__}, {}
        exec(compile(row["ground_truth"], "<answer>", "exec"), namespace, local)
        for call in row["test_cases"]:
            try:
                plaindata.dumps(eval(call, namespace, local))
            except Exception:
                pass
    gc.freeze()
start = time.perf_counter()
for i in range(n):
    pid = os.fork()
    if pid == 0:
        if what not in ("bare", "template"):
            answer(rows[i % len(rows)])
        os._exit(0)
    os.waitpid(pid, 0)
print((time.perf_counter() - start) / n)
"""


def forks(n: int, what: str) -> float:
    """Seconds per fork of the loop above, in a fresh interpreter (bare: no site, nothing imported)."""
    flags = ["-I", "-S"] if what == "bare" else []
    done = subprocess.run(
        [sys.executable, *flags, "-c", LOOP, str(n), what], capture_output=True, text=True, check=True
    )
    return float(done.stdout.split()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--forks", type=int, default=1000, help="forks per measurement (default: 1000)")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds (default: 5)")
    parser.add_argument("--rows", type=Path, default=DEFAULT_ROWS, help="ColBench backend JSONL")
    args = parser.parse_args(argv)
    console = Console(width=140)
    rows = [row for _, row in iter_jsonl(args.rows)]
    tasks = [task_from_row(row, args.rows, i) for i, row in enumerate(rows, 1)]
    rows_file = Path(tempfile.mkstemp(suffix=".json")[1])
    rows_file.write_text(
        json.dumps([{"ground_truth": t["ground_truth"], "test_cases": t["test_cases"]} for t in tasks])
    )

    def anchor() -> float:
        start = time.perf_counter()
        anchor_successes(tasks, [t["ground_truth"] for t in tasks])
        return (time.perf_counter() - start) / len(tasks)

    measures = {
        "anchor": ("in-process evaluator, a row (reference and answer)", anchor),
        "bare": ("fork + exit, bare interpreter (-I -S)", lambda: forks(args.forks, "bare")),
        "template": ("fork + exit, the sandbox's template", lambda: forks(args.forks, "template")),
        "answer": ("fork + the row's answer + exit, from the template", lambda: forks(args.forks, str(rows_file))),
    }
    seconds: dict[str, list[float]] = {name: [] for name in measures}
    for run in range(args.rounds):
        for name in list(measures) if run % 2 == 0 else list(reversed(measures)):
            seconds[name].append(measures[name][1]())
    rows_file.unlink()
    RESULTS.parent.mkdir(parents=True, exist_ok=True)

    cores = os.cpu_count() or 1
    median = {name: statistics.median(s) for name, s in seconds.items()}
    budget = 2 * cores * median["anchor"]  # CPU an answer may cost, all of it, for half the anchor's pace
    table = Table(
        title=f"Per answer, medians of {args.rounds} alternating rounds ({args.forks} forks each), {cores} cores"
    )
    for column in ("measure", "ms", "x anchor row", "share of the 0.5x budget"):
        table.add_column(column, justify="left" if column == "measure" else "right")
    for name, (label, _) in measures.items():
        table.add_row(
            label, f"{median[name] * 1e3:.3f}", f"{median[name] / median['anchor']:.2f}", f"{median[name] / budget:.0%}"
        )
    console.print(table)
    console.print(
        f"budget at half the anchor's pace on {cores} cores: {budget * 1e3:.3f} ms of CPU an answer, every process "
        f"included; the fork floor with the answer takes {median['answer'] / budget:.0%} of it"
    )
    report = {
        "rows": str(args.rows),
        "forks": args.forks,
        "rounds": args.rounds,
        "machine": machine(),
        "python": sys.version.split()[0],
        "seconds": seconds,
        "median_s": median,
        "budget_s": budget,
        "floor_share_of_budget": median["answer"] / budget,
    }
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    console.print(f"wrote {RESULTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
