"""The data-scale experiment's figures and tables for docs/scaling.md, from the committed records.

    .venv/bin/python scripts/scaling_figures.py            # reads reports/experiments/scale-*/
    .venv/bin/python scripts/scaling_figures.py --out docs/screenshots

Each record's `summary/results.json` (the report stage's output) gives, per method, the success rate
over seeds and, for SWEET-RL against each other method, the paired task-bootstrap 95% interval; and
each critic's mechanism metrics. Writes `scaling-success.png` (success against offline trajectories,
log scale, one line per method with its seed spread) and `scaling-critics.png` (the critics' metrics
against trajectories), and prints the Markdown tables docs/scaling.md holds. A point whose record
is not committed yet is left out.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import NullFormatter  # noqa: E402

RECORDS = Path("reports/experiments")
POINT = re.compile(r"scale-(\d+)$")
METHODS = {
    "zero_shot": "zero-shot",
    "rft": "RFT",
    "mtdpo": "MT-DPO",
    "sweet": "SWEET-RL",
    "sweet_no_info": "SWEET-RL, no-info critic",
}
CRITIC_METRICS = {
    "pairs": "critic training pairs",
    "informative_pair_share": "informative step pairs",
    "inverted_pair_share": "inverted step pairs",
    "good_vs_bad_accuracy": "good vs bad accuracy",
    "ranking_agreement": "ranking agreement",
}
SHARES = {"informative_pair_share", "inverted_pair_share", "good_vs_bad_accuracy", "ranking_agreement"}


def points(records: Path) -> dict[int, dict]:
    """The backend results of each committed point, by its number of offline trajectories."""
    found = {}
    for record in sorted(records.iterdir()):
        match = POINT.match(record.name)
        results = record / "summary" / "results.json"
        if match and results.is_file():
            found[int(match.group(1))] = json.loads(results.read_text())["domains"]["backend"]
    return dict(sorted(found.items()))


def stage_minutes(records: Path, n: int) -> dict[str, float]:
    """Wall minutes of each stage kind in a point's run records (`runs/`, copied from reports/runs)."""
    minutes: dict[str, float] = {}
    for run in sorted((records / f"scale-{n}" / "runs").glob("*.json")):
        kind = run.stem.split("@")[0]
        minutes[kind] = minutes.get(kind, 0.0) + json.loads(run.read_text())["wall_time_s"] / 60
    return minutes


def success(backend: dict) -> dict[str, tuple[float, float]]:
    """Success (%) per method: mean and standard deviation over seeds."""
    column = backend["metrics"].index("success_rate")
    return {
        row["method"]: (100 * row["means"][column], 100 * (row["stds"][column] or 0.0))
        for row in backend["rows"]
        if row["ran"] and row["method"] in METHODS
    }


def differences(backend: dict) -> dict[str, tuple[float, float, float]]:
    """SWEET-RL minus each method, in points of success: (difference, low, high)."""
    return {
        d["b"]: (100 * d["difference"], 100 * d["low"], 100 * d["high"])
        for d in backend["paired_differences"]
        if d["a"] == "sweet" and d["measure"] == "success"
    }


def critic_value(backend: dict, name: str, metric: str) -> float | None:
    """A critic's mechanism metric, shares in %; None where the point has none."""
    value = {c["critic"]: c for c in backend.get("critics", [])}.get(name, {}).get(metric)
    return None if value is None else (100 if metric in SHARES else 1) * value


def plot_success(data: dict[int, dict], out: Path) -> None:
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    per_point = {n: success(b) for n, b in data.items()}
    for method, label in METHODS.items():
        xs = [n for n, s in per_point.items() if method in s]
        if not xs:
            continue
        means, stds = zip(*(per_point[n][method] for n in xs))
        ax.errorbar(xs, means, yerr=stds, marker="o", capsize=3, label=label)
    ax.set_xscale("log")
    ax.set_xlabel("offline trajectories")
    ax.set_ylabel("test success (%), mean ± std over seeds")
    ax.set_xticks(list(data), [f"{n:,}" for n in data])
    ax.xaxis.set_minor_formatter(NullFormatter())  # only the points are labelled
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def plot_critics(data: dict[int, dict], out: Path) -> None:
    fig, axes = plt.subplots(1, len(CRITIC_METRICS), figsize=(3.0 * len(CRITIC_METRICS), 3.2))
    for ax, (metric, title) in zip(axes, CRITIC_METRICS.items()):
        for name in ("with_info", "no_info"):
            values = {n: critic_value(b, name, metric) for n, b in data.items()}
            xs = [n for n, v in values.items() if v is not None]
            ax.plot(xs, [values[n] for n in xs], marker="o", label=name)
        ax.set_xscale("log")
        ax.set_title(title + (" (%)" if metric in SHARES else ""), fontsize=9)
        ax.set_xticks(list(data), [f"{n:,}" for n in data], fontsize=7)
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def row(label: str, cells: list[str]) -> str:
    return f"| {label} | " + " | ".join(cells) + " |\n"


def tables(data: dict[int, dict], records: Path = RECORDS) -> str:
    head = "| method | " + " | ".join(f"{n:,}" for n in data) + " |\n|---|" + "---|" * len(data) + "\n"
    successes = [success(b) for b in data.values()]
    gaps = [differences(b) for b in data.values()]
    rows = "".join(
        row(label, ["{:.1f} ± {:.1f}".format(*s[method]) if method in s else "—" for s in successes])
        for method, label in METHODS.items()
    )
    diffs = "".join(
        row(
            f"SWEET-RL − {METHODS[other]}",
            ["{:+.1f} [{:+.1f}, {:+.1f}]".format(*g[other]) if other in g else "—" for g in gaps],
        )
        for other in ("rft", "mtdpo", "sweet_no_info", "zero_shot")
    )
    critic_rows = "".join(
        row(
            f"{title}, with-info / no-info",
            [
                " / ".join(
                    "—" if (v := critic_value(b, name, metric)) is None else f"{v:.1f}"
                    for name in ("with_info", "no_info")
                )
                for b in data.values()
            ],
        )
        for metric, title in CRITIC_METRICS.items()
    )
    times = {n: stage_minutes(records, n) for n in data}
    kinds = sorted(
        {kind for t in times.values() for kind in t}, key=lambda k: -max(t.get(k, 0) for t in times.values())
    )
    time_rows = "".join(row(kind, [f"{times[n].get(kind, 0):.1f}" for n in data]) for kind in kinds)
    time_rows += row("**all stages**", [f"**{sum(times[n].values()):.0f}**" for n in data])
    return (
        "Success (%):\n\n"
        + head
        + rows
        + "\nPaired 95% intervals (points of success):\n\n"
        + head.replace("method", "difference")
        + diffs
        + "\nCritics:\n\n"
        + head.replace("method", "critic metric")
        + critic_rows
        + "\nStage wall time (minutes, all seeds; reused stages count their first run):\n\n"
        + head.replace("method", "stage")
        + time_rows
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=Path, default=RECORDS)
    parser.add_argument("--out", type=Path, default=Path("docs/screenshots"))
    args = parser.parse_args()
    data = points(args.records)
    if not data:
        raise SystemExit(f"{args.records}: no scale-<N>/summary/results.json committed yet")
    args.out.mkdir(parents=True, exist_ok=True)
    plot_success(data, args.out / "scaling-success.png")
    plot_critics(data, args.out / "scaling-critics.png")
    print(tables(data, args.records))


if __name__ == "__main__":
    main()
