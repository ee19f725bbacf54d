"""Benchmark: frontend rendering throughput of the RenderPool against an earlier one and a fresh browser per page.

Pages are the real ColBench frontend targets (30 rows), repeated. In the same run:

  (a) `sweetflow.frontend.render.RenderPool` with 2 pages (the default) and with 1 page: one browser
      started once (in the timing), each page in a browser context of its own;
  (b) with `--baseline-rev`, the RenderPool of an earlier commit (read with `git show` from the
      repository the imported sweetflow comes from), with 2 pages; e.g. 003b80c, which reused a tab
      and its context for every page of its slot, against this file at that commit (its render.py
      imports modules that HEAD has since moved);
  (c) a fresh browser per page: a new one-page RenderPool (Playwright driver and Chromium launched,
      then closed) for every page, one after the other: what a naive renderer does.

(a) and, when given, (b) with 2 pages run `--pairs` times, alternating, and the table gives each one's median and
the median of the per-pair ratios, so that a machine's load drifting during the run falls on both.
Every method renders offline with the same routing, settling and screenshot, so all give the same
PNGs; the run checks that they do. Prints a table and writes bench/results/render_throughput.json.
Usage:
    python bench/render_throughput.py [--repeat 2] [--pairs 3] [--baseline-rev REV] [--fresh-pages 30] [--rows PATH]
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

from rich.console import Console
from rich.table import Table

import sweetflow
from sweetflow.core.artifacts import machine
from sweetflow.core.inputs import iter_jsonl
from sweetflow.frontend.render import RenderPool
from sweetflow.params import load_params

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_ROWS = ROOT / "tests" / "data" / "colbench-sample" / "frontend_test_first30.jsonl"
RESULTS = ROOT / "bench" / "results" / "render_throughput.json"
TAILWIND = ROOT / "vendor" / "tailwindcss-2.2.19" / "tailwind.min.css"
RENDER = load_params(ROOT / "params.yaml").frontend.scoring.render
# The last commit whose RenderPool reused a tab and its context for every page of a slot.


def earlier_render(rev: str) -> ModuleType:
    """sweetflow/frontend/render.py as it was at `rev`, as a module of its own."""
    repository = Path(sweetflow.__file__).resolve().parents[1]
    source = subprocess.run(
        ["git", "-C", str(repository), "show", f"{rev}:sweetflow/frontend/render.py"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    name = f"render_at_{rev}"
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader=None))
    sys.modules[name] = module  # dataclasses look their module up
    exec(compile(source, f"{rev}:sweetflow/frontend/render.py", "exec"), module.__dict__)
    return module


def pooled(htmls: list[str], pages: int, pool_class=RenderPool, label: str = "pool") -> tuple[float, list]:
    start = time.perf_counter()
    with pool_class(RENDER.model_copy(update={"pages": pages, "tailwind_css": TAILWIND})) as pool:
        shots = pool.render_many(htmls, desc=f"{label} of {pages}")
    return time.perf_counter() - start, shots


def fresh_per_page(htmls: list[str]) -> tuple[float, list[bytes | None]]:
    start = time.perf_counter()
    shots = []
    for html in htmls:
        with RenderPool(RENDER.model_copy(update={"pages": 1, "tailwind_css": TAILWIND})) as pool:
            shots.append(pool.render(html))
    return time.perf_counter() - start, shots


def digest(shot: bytes | None) -> str | None:
    return None if shot is None else hashlib.sha1(shot).hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=2, help="times the rows are repeated for the pools (default: 2)")
    parser.add_argument(
        "--fresh-pages", type=int, default=30, help="pages rendered with a fresh browser each; 0: none (default: 30)"
    )
    parser.add_argument("--rows", type=Path, default=DEFAULT_ROWS, help="ColBench frontend JSONL")
    parser.add_argument(
        "--pairs", type=int, default=3, help="runs of the pool (alternating with the earlier one's) (default: 3)"
    )
    parser.add_argument("--baseline-rev", help="commit of an earlier pool to compare with (default: none)")
    args = parser.parse_args(argv)
    console = Console()
    if not args.rows.exists():
        console.print(f"[yellow]No ColBench rows at {args.rows}; nothing to benchmark.[/]")
        return 0

    rows = [row["ground_truth"] for _, row in iter_jsonl(args.rows)]
    pool_pages = rows * args.repeat
    fresh_pages = (rows * (args.fresh_pages // len(rows) + 1))[: args.fresh_pages]
    results, shots = [], {}

    def record(name: str, pages: int, seconds: float, rendered: list[bytes | None]) -> None:
        n = len(rendered)
        shots[(name, pages)] = [digest(s) for s in rendered[: len(rows)]]
        results.append(
            {
                "method": name,
                "pages": pages,
                "runs": 1,
                "rendered": n,
                "failures": sum(s is None for s in rendered),
                "seconds": seconds,
                "pages_per_s": n / seconds,
            }
        )

    # (a) against (b), 2 pages each, alternating; which one goes first alternates too.
    order = [("pool", RenderPool)]
    if args.baseline_rev:
        order.append(("earlier", earlier_render(args.baseline_rev).RenderPool))
    times: dict[str, list[float]] = {name: [] for name, _ in order}
    failures = dict.fromkeys(times, 0)
    for i in range(args.pairs):
        for name, pool_class in order if i % 2 == 0 else order[::-1]:
            seconds, rendered = pooled(pool_pages, 2, pool_class, f"{name} ({i + 1}/{args.pairs})")
            times[name].append(seconds)
            failures[name] += sum(s is None for s in rendered)
            shots[(name, 2)] = [digest(s) for s in rendered[: len(rows)]]
    for name, label in (("pool", "pool"), ("earlier", f"pool at {args.baseline_rev}")):
        if name not in times:
            continue
        median = statistics.median(times[name])
        results.append(
            {
                "method": label,
                "pages": 2,
                "runs": args.pairs,
                "rendered": len(pool_pages),
                "failures": failures[name],
                "seconds": median,
                "pages_per_s": len(pool_pages) / median,
                "seconds_each": times[name],
            }
        )
    paired = {}
    if args.baseline_rev:
        ratios = [b / a for a, b in zip(times["pool"], times["earlier"])]  # this pool's pages/s over the earlier's
        paired = {
            "baseline_rev": args.baseline_rev,
            "ratios_to_baseline": ratios,
            "median_ratio_to_baseline": statistics.median(ratios),
        }
    seconds, rendered = pooled(pool_pages, 1)
    record("pool", 1, seconds, rendered)
    if args.fresh_pages:
        seconds, rendered = fresh_per_page(fresh_pages)
        record("fresh browser per page", 1, seconds, rendered)
        fresh_rate = results[-1]["pages_per_s"]
        for r in results:
            r["ratio_to_fresh"] = r["pages_per_s"] / fresh_rate

    table = Table(
        title=f"Frontend rendering throughput: {len(rows)} ColBench pages (pools: x {args.repeat}); "
        f"medians of {args.pairs} alternating pairs"
    )
    for column in ("method", "pages", "runs", "shots", "failed", "s", "pages/s", "x fresh"):
        table.add_column(column, justify="left" if column == "method" else "right", no_wrap=True)
    for r in results:
        fresh = f"{r['ratio_to_fresh']:.2f}" if "ratio_to_fresh" in r else "-"
        table.add_row(
            r["method"],
            str(r["pages"]),
            str(r["runs"]),
            str(r["rendered"]),
            str(r["failures"]),
            f"{r['seconds']:.1f}",
            f"{r['pages_per_s']:.2f}",
            fresh,
        )
    console.print(table)
    if paired:
        each = ", ".join(f"{x:.2f}" for x in paired["ratios_to_baseline"])
        console.print(
            f"this pool / pool at {args.baseline_rev}, pages/s, per pair: {each}; "
            f"median {paired['median_ratio_to_baseline']:.2f}"
        )
    # The same page must give the same PNG whichever browser or pool page rendered it.
    reference = shots[("pool", 2)]
    agree = all(digests == reference[: len(digests)] for digests in shots.values())
    console.print("screenshots agree" if agree else "[red]screenshots DIFFER between methods[/]")

    version = subprocess.run(["/usr/bin/chromium", "--version"], capture_output=True, text=True).stdout.strip()
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    report = {
        "rows": str(args.rows),
        "distinct_pages": len(rows),
        "repeat": args.repeat,
        "machine": machine(),
        "load_average_1m_at_end": os.getloadavg()[0],
        "python": sys.version.split()[0],
        "chromium": version,
        "screenshots_agree": agree,
        "paired": paired,
        "results": results,
    }
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    console.print(f"wrote {RESULTS.relative_to(ROOT)}")
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
