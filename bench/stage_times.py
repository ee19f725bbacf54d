"""Benchmark: the default's stage times, before and after a change, from the stages' own run records.

Each stage writes `reports/runs/<stage>.json` with `wall_time_s` (its process from start, imports
included). Run the DAG in fresh clones of the two commits on one idle machine, each with `dvc repro -f
--no-run-cache` (the same `ATEN_CPU_CAPABILITY` for all), then give this the clones: each side may have
several runs (the machine's speed drifts between runs), and the ratio is the after runs' mean over the
before runs' mean. Stages under `--small` seconds (before) share one row.

Prints a table and writes bench/results/stage_times.json. Usage:
    python bench/stage_times.py --before CLONE [CLONE ...] --after CLONE [CLONE ...] [--small 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from rich.console import Console
from rich.table import Table

RESULTS = Path(__file__).parent / "results" / "stage_times.json"


def stage_times(project: Path) -> dict[str, float]:
    """Each stage's wall time in `project`'s run records, by DVC's stage name."""
    records = sorted((project / "reports" / "runs").glob("*.json"))
    if not records:
        raise SystemExit(f"{project}: no run records under reports/runs/ (run `dvc repro` there first)")
    return {path.stem: json.loads(path.read_text())["wall_time_s"] for path in records}


def compare(before: list[dict[str, float]], after: list[dict[str, float]], small: float) -> list[dict]:
    """Rows of stage, the before and after runs' times and the ratio of means, largest stage first;
    the stages under `small` seconds before in one row, then the sum."""
    stages = sorted(set().union(*before, *after))
    for run in before + after:
        missing = [s for s in stages if s not in run]
        if missing:
            raise SystemExit(f"a run lacks stages {missing[:5]}: compare runs of the same DAG")

    def row(name: str, keys: list[str]) -> dict:
        b = [sum(run[k] for k in keys) for run in before]
        a = [sum(run[k] for k in keys) for run in after]
        return {"stage": name, "before": b, "after": a, "ratio": statistics.mean(a) / statistics.mean(b)}

    mean_before = {s: statistics.mean(run[s] for run in before) for s in stages}
    large = sorted((s for s in stages if mean_before[s] >= small), key=lambda s: -mean_before[s])
    rest = [s for s in stages if mean_before[s] < small]
    rows = [row(s, [s]) for s in large]
    if rest:
        rows.append(row(f"the {len(rest)} stages under {small:g} s", rest))
    return [*rows, row(f"sum of the {len(stages)} stages", stages)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, nargs="+", required=True, help="clones run at the commit before")
    parser.add_argument("--after", type=Path, nargs="+", required=True, help="clones run at the commit after")
    parser.add_argument("--small", type=float, default=5.0, help="seconds under which stages share a row")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    rows = compare([stage_times(p) for p in args.before], [stage_times(p) for p in args.after], args.small)
    table = Table(title="Stage times (s), from the run records")
    for column in ("stage", *[f"before {i + 1}" for i in range(len(args.before))]):
        table.add_column(column)
    for i in range(len(args.after)):
        table.add_column(f"after {i + 1}")
    table.add_column("after / before")
    for r in rows:
        table.add_row(r["stage"], *[f"{t:.1f}" for t in r["before"] + r["after"]], f"{r['ratio']:.2f}")
    Console().print(table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    runs = {"before": [str(p) for p in args.before], "after": [str(p) for p in args.after]}
    args.out.write_text(json.dumps({"runs": runs, "rows": rows}, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
