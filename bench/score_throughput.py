"""Benchmark: backend scoring throughput of our sandboxed scorer against an in-process baseline.

Trajectories are real ColBench rows whose answer is the reference itself, repeated (100 rows x 10 =
1,000 by default), so every scorer should report a success rate near 100%, and both must agree.

  (a) `sweetflow.scorefile.score_file`: references once per task (twice, for nondeterminism), then
      every answer, each in a fresh jailed process of a pre-warmed Sandbox pool (started in the timing);
  (b) a baseline written after ColBench's official evaluator: for each trajectory, `exec` the
      reference and the answer in fresh namespaces of this very process and `eval` each test call
      under a 1 s interval timer. Not a sandbox, and only as fast as one core.

Prints a table and writes bench/results/score_throughput.json. Usage:
    python bench/score_throughput.py [--repeat 10] [--rows PATH] [--workers 0]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from sweetflow.backend.scoring import extract_code
from sweetflow.backend.tasks.colbench import task_from_row
from sweetflow.inputs import iter_jsonl
from sweetflow.params import load_params
from sweetflow.scorefile import score_file

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_ROWS = ROOT / "tests" / "data" / "colbench-sample" / "backend_test_first100.jsonl"
RESULTS = ROOT / "bench" / "results" / "score_throughput.json"
CALL_LIMIT_S = 1.0  # ColBench's per-call limit


class CallTimedOut(Exception):
    pass


def _raise_timeout(signum, frame):
    raise CallTimedOut()


FAILED = object()  # an outcome that equals no output


def _timed_eval(call: str, namespace: dict) -> object:
    signal.setitimer(signal.ITIMER_REAL, CALL_LIMIT_S)
    try:
        return eval(call, namespace)
    except Exception:
        return FAILED
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _exec_fresh(code: str) -> dict | None:
    namespace: dict = {}
    signal.setitimer(signal.ITIMER_REAL, CALL_LIMIT_S)
    try:
        exec(code, namespace)
    except Exception:
        return None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return namespace


def baseline_success_rate(tasks: list[dict], answers: list[str]) -> float:
    """The in-process evaluator: a trajectory succeeds when every test's output equals the reference's
    output and that output is not None."""
    previous = signal.signal(signal.SIGALRM, _raise_timeout)
    successes = 0
    try:
        for task, answer in zip(tasks, answers):
            reference_ns, answer_ns = _exec_fresh(task["ground_truth"]), _exec_fresh(extract_code(answer))
            if reference_ns is None or answer_ns is None:
                continue
            passed = 0
            for call in task["test_cases"]:
                expected = _timed_eval(call, reference_ns)
                if expected is not None and expected is not FAILED and _timed_eval(call, answer_ns) == expected:
                    passed += 1
            successes += passed == len(task["test_cases"])
    finally:
        signal.signal(signal.SIGALRM, previous)
    return successes / len(tasks)


def write_trajectories(rows: list[dict], repeat: int, path: Path) -> int:
    with path.open("w") as fh:
        for _ in range(repeat):
            for row in rows:
                fh.write(json.dumps({"task": row, "answer": row["ground_truth"]}) + "\n")
    return len(rows) * repeat


def timed(fn, *args, **kwargs) -> tuple[float, object]:
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    return time.perf_counter() - start, result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=10, help="times each row is repeated (default: 10)")
    parser.add_argument("--rows", type=Path, default=DEFAULT_ROWS, help="ColBench backend JSONL")
    parser.add_argument("--workers", type=int, default=0, help="sandbox workers of the main run; 0: one per core")
    args = parser.parse_args(argv)
    console = Console()
    if not args.rows.exists():
        console.print(f"[yellow]No ColBench rows at {args.rows}; nothing to benchmark.[/]")
        return 0

    rows = [row for _, row in iter_jsonl(args.rows)]
    tasks = [task_from_row(row, args.rows, i) for i, row in enumerate(rows, 1)] * args.repeat
    workers = args.workers or os.cpu_count() or 1
    params = load_params(ROOT / "params.yaml")
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        trajectories = Path(tmp) / "trajectories.jsonl"
        n = write_trajectories(rows, args.repeat, trajectories)
        for w in dict.fromkeys([workers, 1]):
            sandbox = params.backend.scoring.model_copy(update={"workers": w})
            frontend = params.frontend.scoring
            seconds, summary = timed(score_file, trajectories, "backend", None, sandbox, frontend.render, frontend.similarity)
            results.append({"scorer": "sweetflow sandbox", "workers": w, "seconds": seconds,
                            "success_rate": summary["success_rate"]})  # fmt: skip
    seconds, rate = timed(baseline_success_rate, tasks, [t["ground_truth"] for t in tasks])
    baseline = {"scorer": "in-process exec", "workers": 1, "seconds": seconds, "success_rate": rate}
    results.append(baseline)
    for r in results:
        r["trajectories_per_s"] = n / r["seconds"]
        r["ratio_to_baseline"] = r["trajectories_per_s"] / (n / baseline["seconds"])

    table = Table(title=f"Backend scoring throughput: {n} trajectories ({len(rows)} rows x {args.repeat})")
    for column in ("scorer", "workers", "seconds", "traj/s", "success", "x baseline"):
        table.add_column(column, justify="left" if column == "scorer" else "right", no_wrap=True)
    for r in results:
        table.add_row(r["scorer"], str(r["workers"]), f"{r['seconds']:.2f}", f"{r['trajectories_per_s']:.0f}",
                      f"{r['success_rate']:.1%}", f"{r['ratio_to_baseline']:.2f}")  # fmt: skip
    console.print(table)
    agree = len({r["success_rate"] for r in results}) == 1
    console.print("success rates agree" if agree else "[red]success rates DISAGREE[/]")

    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    report = {
        "rows": str(args.rows),
        "trajectories": n,
        "repeat": args.repeat,
        "cpu_count": os.cpu_count(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "success_rates_agree": agree,
        "results": results,
    }
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    console.print(f"wrote {RESULTS.relative_to(ROOT)}")
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
