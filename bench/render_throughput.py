"""Benchmark: frontend rendering throughput of the RenderPool against a fresh browser per page.

Pages are the real ColBench frontend targets (30 rows), repeated. In the same run:

  (a) `sweetflow.frontend.render.RenderPool` with 2 pages (the default) and with 1 page: one browser
      started once (in the timing), pages reused;
  (b) a fresh browser per page: a new one-page RenderPool (Playwright driver and Chromium launched,
      then closed) for every page, one after the other: what a naive renderer does.

Every method renders offline with the same routing, settling and screenshot, so all give the same
PNGs; the run checks that they do. Prints a table and writes bench/results/render_throughput.json.
Usage:
    python bench/render_throughput.py [--repeat 2] [--fresh-pages 30] [--rows PATH]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from sweetflow.frontend.render import RenderPool
from sweetflow.inputs import iter_jsonl
from sweetflow.params import load_params

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_ROWS = ROOT / "tests" / "data" / "colbench-sample" / "frontend_test_first30.jsonl"
RESULTS = ROOT / "bench" / "results" / "render_throughput.json"
TAILWIND = ROOT / "vendor" / "tailwindcss-2.2.19" / "tailwind.min.css"
RENDER = load_params(ROOT / "params.yaml").frontend.scoring.render


def pooled(htmls: list[str], pages: int) -> tuple[float, list[bytes | None]]:
    start = time.perf_counter()
    with RenderPool(RENDER.model_copy(update={"pages": pages, "tailwind_css": TAILWIND})) as pool:
        shots = pool.render_many(htmls, desc=f"pool of {pages}")
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
    parser.add_argument("--fresh-pages", type=int, default=30, help="pages rendered with a fresh browser each (default: 30)")
    parser.add_argument("--rows", type=Path, default=DEFAULT_ROWS, help="ColBench frontend JSONL")
    args = parser.parse_args(argv)
    console = Console()
    if not args.rows.exists():
        console.print(f"[yellow]No ColBench rows at {args.rows}; nothing to benchmark.[/]")
        return 0

    rows = [row["ground_truth"] for _, row in iter_jsonl(args.rows)]
    pool_pages = rows * args.repeat
    fresh_pages = (rows * (args.fresh_pages // len(rows) + 1))[: args.fresh_pages]
    results, shots = [], {}
    for name, pages, run in [
        ("pool", 2, lambda: pooled(pool_pages, 2)),
        ("pool", 1, lambda: pooled(pool_pages, 1)),
        ("fresh browser per page", 1, lambda: fresh_per_page(fresh_pages)),
    ]:
        seconds, rendered = run()
        n = len(rendered)
        shots[(name, pages)] = [digest(s) for s in rendered[: len(rows)]]
        results.append({"method": name, "pages": pages, "rendered": n, "failures": sum(s is None for s in rendered),
                        "seconds": seconds, "pages_per_s": n / seconds})  # fmt: skip
    fresh_rate = results[-1]["pages_per_s"]
    for r in results:
        r["ratio_to_fresh"] = r["pages_per_s"] / fresh_rate

    table = Table(title=f"Frontend rendering throughput: {len(rows)} ColBench pages (pools: x {args.repeat})")
    for column in ("method", "pages", "shots", "failed", "s", "pages/s", "x fresh"):
        table.add_column(column, justify="left" if column == "method" else "right", no_wrap=True)
    for r in results:
        table.add_row(r["method"], str(r["pages"]), str(r["rendered"]), str(r["failures"]), f"{r['seconds']:.1f}",
                      f"{r['pages_per_s']:.2f}", f"{r['ratio_to_fresh']:.2f}")  # fmt: skip
    console.print(table)
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
        "cpu_count": os.cpu_count(),
        "load_average_1m_at_end": os.getloadavg()[0],
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "chromium": version,
        "screenshots_agree": agree,
        "results": results,
    }
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    console.print(f"wrote {RESULTS.relative_to(ROOT)}")
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
