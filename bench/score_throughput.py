"""Benchmark: backend scoring throughput of our sandboxed scorer against an in-process anchor.

Trajectories are real ColBench rows whose answer is the reference itself, repeated (100 rows x 10 =
1,000 by default), all scored by ColBench's official rules (answer filter on, code exec'd inside a
function). Three scorers, in alternating order over `--runs` rounds, each timed on its own:

  (a) `sweetflow score --tasks`: `sweetflow.scorefile.score_file` with the reference outputs that the
      `tasks` stage stores with each task (computed here once, before the timing, as the stage does:
      twice in the sandbox, `check_references`). Only the answers run: each in a fresh jailed process
      of a pre-warmed Sandbox pool (started inside the timing);
  (b) `sweetflow score` without a task table: each distinct task's reference runs twice, then every
      answer (one pool each);
  (c) the anchor, written after ColBench's evaluator: for each trajectory, `exec` the reference and
      the answer in fresh namespaces of this very process (inside a function's locals) and `eval` each
      test call under a 1 s interval timer, `reference == answer`. Not a sandbox; one core.

The table gives each scorer's median seconds and the median over rounds of the paired ratio
(anchor seconds / scorer seconds; 1.0 is the anchor's pace). Outcomes are compared row by row: (a)
must equal (b) on every row, and both must equal the anchor on every other row but two kinds, counted
apart: a reference that gives other outputs when run again (flag `nondeterministic`) agrees with any
answer only by chance; an output holding a NaN inside a container passes in one process when both
sides hold the same NaN object (`[math.nan] == [math.nan]`: list equality tries identity first) and
never across processes. Either kind made the two success rates of earlier versions of this bench
differ by a row on the 1,000 official test rows. Writes bench/results/score_throughput.json.

    python bench/score_throughput.py [--repeat 10] [--runs 3] [--rows PATH] [--workers 0]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

import polars as pl
from rich.console import Console
from rich.table import Table

from sweetflow.backend.params import ScoringRules
from sweetflow.backend.sandbox.pool import Sandbox
from sweetflow.backend.scoring import check_references, extract_code, refused_by_filter
from sweetflow.backend.tasks.colbench import task_from_row
from sweetflow.core.artifacts import machine
from sweetflow.core.inputs import iter_jsonl
from sweetflow.params import load_params
from sweetflow.scorefile import OFFICIAL_RULES, score_file

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_ROWS = ROOT / "tests" / "data" / "colbench-sample" / "backend_test_first100.jsonl"
RESULTS = ROOT / "bench" / "results" / "score_throughput.json"
CALL_LIMIT_S = 1.0  # ColBench's per-call limit
OFFICIAL = ScoringRules(answer_filter=True, function_namespace=True)


class CallTimedOut(Exception):
    pass


def _raise_timeout(signum, frame):
    raise CallTimedOut()


FAILED = object()  # an outcome that equals no output


def _timed(fn):
    signal.setitimer(signal.ITIMER_REAL, CALL_LIMIT_S)
    try:
        return fn()
    except Exception:
        return FAILED
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _exec_fresh(code: str) -> tuple[dict, dict] | None:
    """(globals, locals) after running `code` as ColBench's evaluator does, inside a function: its
    top-level names are the function's locals."""
    namespace: dict = {}
    local: dict = {}
    return None if _timed(lambda: exec(code, namespace, local)) is FAILED else (namespace, local)


def anchor_successes(tasks: list[dict], answers: list[str]) -> list[bool]:
    """The in-process evaluator: a trajectory succeeds when every test's output equals the reference's
    output and that output is not None."""
    previous = signal.signal(signal.SIGALRM, _raise_timeout)
    successes = []
    try:
        for task, answer in zip(tasks, answers):
            code = extract_code(answer)
            reference, ours = _exec_fresh(task["ground_truth"]), None if refused_by_filter(code) else _exec_fresh(code)
            passed = 0
            if reference is not None and ours is not None:
                for call in task["test_cases"]:
                    expected = _timed(lambda: eval(call, *reference))
                    output = _timed(lambda: eval(call, *ours))
                    passed += expected is not None and expected is not FAILED and bool(expected == output)
            successes.append(passed == len(task["test_cases"]))
    finally:
        signal.signal(signal.SIGALRM, previous)
    return successes


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
    parser.add_argument("--runs", type=int, default=3, help="alternating rounds of the three scorers (default: 3)")
    parser.add_argument("--rows", type=Path, default=DEFAULT_ROWS, help="ColBench backend JSONL")
    parser.add_argument("--workers", type=int, default=0, help="sandbox workers; 0: one per core")
    args = parser.parse_args(argv)
    console = Console(width=140)
    if not args.rows.exists():
        console.print(f"[yellow]No ColBench rows at {args.rows}; nothing to benchmark.[/]")
        return 0

    rows = [row for _, row in iter_jsonl(args.rows)]
    tasks = [task_from_row(row, args.rows, i) for i, row in enumerate(rows, 1)]
    workers = args.workers or os.cpu_count() or 1
    params = load_params(ROOT / "params.yaml")
    # ColBench's evaluator's rules (`sweetflow score --rules official`): OFFICIAL, resolved from the section.
    sandbox = params.backend.scoring.model_copy(update={"workers": workers, **OFFICIAL_RULES})
    backend = params.backend.model_copy(update={"scoring": sandbox})
    assert backend.scoring_rules() == OFFICIAL
    # What the `tasks` stage stores with each task, made once, untimed: the references run twice.
    distinct = list({t["task_id"]: t for t in tasks}.values())
    with Sandbox(sandbox) as pool:
        made_s, checks = timed(check_references, distinct, pool, rules=OFFICIAL)
    stored = {t["task_id"]: c for t, c in zip(distinct, checks)}
    nondeterministic = {t for t, c in stored.items() if "nondeterministic" in c.flags}
    stored_deterministic = {t: c for t, c in stored.items() if t not in nondeterministic}
    nan_inside = {t for t, c in stored.items() if any(e and '"v":"nan"' in e and e[0] in "[{" for e in c.expected)}
    apart = nondeterministic | nan_inside

    seconds: dict[str, list[float]] = {"stored": [], "rerun": [], "anchor": []}
    outcomes: dict[str, list[list[bool]]] = {name: [] for name in seconds}  # each run's, row by row
    with tempfile.TemporaryDirectory() as tmp:
        trajectories, out = Path(tmp) / "trajectories.jsonl", Path(tmp) / "scores.parquet"
        n = write_trajectories(rows, args.repeat, trajectories)
        all_tasks = tasks * args.repeat

        def ours(table: dict | None) -> list[bool]:
            score_file(trajectories, "backend", out, backend, table)
            return pl.read_parquet(out)["success"].to_list()

        scorers = {
            "stored": lambda: ours(stored_deterministic),
            "rerun": lambda: ours(None),
            "anchor": lambda: anchor_successes(all_tasks, [t["ground_truth"] for t in all_tasks]),
        }
        for run in range(args.runs):
            order = list(scorers) if run % 2 == 0 else list(reversed(scorers))
            for name in order:
                s, result = timed(scorers[name])
                seconds[name].append(s)
                outcomes[name].append(result)

    ratios = {name: statistics.median(a / s for a, s in zip(seconds["anchor"], seconds[name])) for name in seconds}
    labels = {"stored": "sweetflow score --tasks", "rerun": "sweetflow score", "anchor": "in-process (anchor)"}
    comparable = [i for i, t in enumerate(all_tasks) if t["task_id"] not in apart]

    def disagree(a: str, b: str, rows: list[int]) -> list[int]:
        """Rows on which some run of `a` or `b` gives another outcome than some other run of either."""
        return [i for i in rows if len({run[i] for run in outcomes[a] + outcomes[b]}) > 1]

    differ = {name: disagree(name, "anchor", comparable) for name in ("stored", "rerun")}
    stored_vs_rerun = disagree(
        "stored", "rerun", [i for i in range(n) if all_tasks[i]["task_id"] not in nondeterministic]
    )
    table = Table(
        title=f"Backend scoring: {n} trajectories ({len(rows)} rows x {args.repeat}), {workers} workers, "
        f"medians of {args.runs} alternating runs"
    )
    for column in ("scorer", "median s", "traj/s", "success", "x anchor (paired median)"):
        table.add_column(column, justify="left" if column == "scorer" else "right", no_wrap=True)
    for name in scorers:
        median = statistics.median(seconds[name])
        rate = statistics.median(sum(run) / n for run in outcomes[name])
        table.add_row(labels[name], f"{median:.2f}", f"{n / median:.0f}", f"{rate:.1%}", f"{ratios[name]:.2f}")
    console.print(table)
    console.print(
        f"reference outputs made once (tasks stage, untimed): {made_s:.2f} s for {len(distinct)} tasks; "
        f"counted apart: {len(nondeterministic)} nondeterministic references, {len(nan_inside)} with a NaN "
        "inside an output"
    )
    agree = not stored_vs_rerun and not differ["stored"] and not differ["rerun"]
    for name, rows_differing in differ.items():
        for i in rows_differing[:5]:
            console.print(f"  [red]{labels[name]} and the anchor differ on row {i + 1}[/] ({all_tasks[i]['task_id']})")
    console.print(
        "outcomes agree row by row"
        if agree
        else f"[red]outcomes DIFFER[/]: stored vs rerun on {len(stored_vs_rerun)} "
        f"rows, against the anchor on {len(differ['stored'])} / {len(differ['rerun'])} comparable rows"
    )

    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    report = {
        "rows": str(args.rows),
        "trajectories": n,
        "repeat": args.repeat,
        "runs": args.runs,
        "workers": workers,
        "machine": machine(),
        "python": sys.version.split()[0],
        "reference_outputs_made_s": made_s,
        "nondeterministic_references": len(nondeterministic),
        "nan_inside_outputs": len(nan_inside),
        "outcomes_agree": agree,
        "rows_differing": {"stored_vs_rerun": stored_vs_rerun, **{f"{k}_vs_anchor": v for k, v in differ.items()}},
        "results": [
            {
                "scorer": labels[name],
                "seconds": seconds[name],
                "median_s": statistics.median(seconds[name]),
                "success_rates": [sum(run) / n for run in outcomes[name]],
                "ratio_to_anchor": ratios[name],
            }
            for name in scorers
        ],
    }
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    console.print(f"wrote {RESULTS.relative_to(ROOT)}")
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
