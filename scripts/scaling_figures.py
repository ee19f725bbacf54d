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


def critics(backend: dict) -> dict[str, dict[str, float]]:
    return {c["critic"]: c for c in backend.get("critics", [])}


def plot_success(data: dict[int, dict], out: Path) -> None:
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for method, label in METHODS.items():
        xs = [n for n, b in data.items() if method in success(b)]
        if not xs:
            continue
        means = [success(data[n])[method][0] for n in xs]
        stds = [success(data[n])[method][1] for n in xs]
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
            xs = [n for n, b in data.items() if critics(b).get(name, {}).get(metric) is not None]
            scale = 100 if metric in SHARES else 1
            ax.plot(xs, [scale * critics(data[n])[name][metric] for n in xs], marker="o", label=name)
        ax.set_xscale("log")
        ax.set_title(title + (" (%)" if metric in SHARES else ""), fontsize=9)
        ax.set_xticks(list(data), [f"{n:,}" for n in data], fontsize=7)
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def tables(data: dict[int, dict], records: Path = RECORDS) -> str:
    head = "| method | " + " | ".join(f"{n:,}" for n in data) + " |\n|---|" + "---|" * len(data) + "\n"
    rows = "".join(
        f"| {label} | "
        + " | ".join(
            "{:.1f} ± {:.1f}".format(*success(b)[method]) if method in success(b) else "—" for b in data.values()
        )
        + " |\n"
        for method, label in METHODS.items()
    )
    diffs = "".join(
        f"| SWEET-RL − {METHODS[other]} | "
        + " | ".join(
            "{:+.1f} [{:+.1f}, {:+.1f}]".format(*differences(b)[other]) if other in differences(b) else "—"
            for b in data.values()
        )
        + " |\n"
        for other in ("rft", "mtdpo", "sweet_no_info", "zero_shot")
    )
    critic_rows = "".join(
        f"| {title}, with-info / no-info | "
        + " | ".join(
            " / ".join(
                f"{(100 if metric in SHARES else 1) * critics(b)[name][metric]:.1f}"
                if critics(b).get(name, {}).get(metric) is not None
                else "—"
                for name in ("with_info", "no_info")
            )
            for b in data.values()
        )
        + " |\n"
        for metric, title in CRITIC_METRICS.items()
    )
    times = {n: stage_minutes(records, n) for n in data}
    kinds = sorted(
        {kind for t in times.values() for kind in t}, key=lambda k: -max(t.get(k, 0) for t in times.values())
    )
    time_rows = "".join(
        f"| {kind} | " + " | ".join(f"{times[n].get(kind, 0):.1f}" for n in data) + " |\n" for kind in kinds
    )
    time_rows += "| **all stages** | " + " | ".join(f"**{sum(times[n].values()):.0f}**" for n in data) + " |\n"
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
