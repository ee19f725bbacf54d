"""The data-scale experiment's figures and tables for docs/scaling.md, from the committed records.

    .venv/bin/python scripts/scaling_figures.py            # reads reports/experiments/scale-*/
    .venv/bin/python scripts/scaling_figures.py --out docs/screenshots

Each record's `summary/results.json` (the report stage's output) gives, per method, the success rate
over seeds and, for SWEET-RL against each other method, the paired task-bootstrap 95% interval; and
each critic's mechanism metrics. Writes `scaling-success.png` (success against offline trajectories,
log scale, one line per method with its seed spread) and `scaling-critics.png` (the critics' metrics
against trajectories), and prints the Markdown tables docs/scaling.md holds. A point whose record
is not committed yet is left out.

Each point is also known by where its policies' configurations were chosen on validation: on the
default's data (750 trajectories) for a plain point; at N for a point re-tuned there
(`scale-<N>-tuned`); at N for a point whose params carry the configurations of `scale-<N>-tuned`.
In the success plot one line joins the points of each (method, configurations chosen at): solid
for the default's, dashed with hollow markers for a re-tuning's.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
from pathlib import Path
from typing import NamedTuple

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import NullFormatter  # noqa: E402

from sweetflow.core.inputs import read_yaml  # noqa: E402
from sweetflow.rl.methods import registry  # noqa: E402

RECORDS = Path("reports/experiments")
POINT = re.compile(r"scale-(\d+)(-tuned)?$")
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


DEFAULT_DATA = 750  # the default run's offline trajectories, on whose validation params.yaml's choices were made


class Point(NamedTuple):
    trajectories: int
    chosen_at: int  # the trajectories on whose validation its policies' configurations were chosen
    name: str  # its record's directory


def points(records: Path) -> dict[Point, dict]:
    """The backend results of each committed point, ordered by trajectories, then where its
    configurations were chosen."""
    found = {}
    for record in sorted(records.iterdir()):
        match = POINT.match(record.name)
        results = record / "summary" / "results.json"
        if match and results.is_file():
            found[record.name] = json.loads(results.read_text())["domains"]["backend"]
    chosen = {int(POINT.match(n).group(1)): policies(records / n) for n in found if n.endswith("-tuned")}
    points = {}
    for name, backend in found.items():
        n, tuned = int(POINT.match(name).group(1)), name.endswith("-tuned")
        mine = policies(records / name)
        at = n if tuned else next((m for m, p in chosen.items() if mine is not None and p == mine), DEFAULT_DATA)
        points[Point(n, at, name)] = backend
    return dict(sorted(points.items()))


def policies(record: Path) -> dict | None:
    """The policies' configurations in a record's params.yaml (read by the params' own rules: DVC writes
    1e-05, which YAML 1.1 reads as a string); None if the record has none. Only that section is read: a
    record made before a key of another section existed stays readable."""
    params = record / "params.yaml"
    if not params.is_file():
        return None
    return {
        name: registry.params_class(p["method"]).model_validate(p).model_dump()
        for name, p in read_yaml(params)["policies"].items()
    }


def column_label(point: Point) -> str:
    if point.name.endswith("-tuned"):
        return f"{point.trajectories:,}, re-tuned"
    if point.chosen_at != DEFAULT_DATA:
        return f"{point.trajectories:,}, tuned at {point.chosen_at:,}"
    return f"{point.trajectories:,}"


def stage_minutes(records: Path, point: Point) -> dict[str, float]:
    """Wall minutes of each stage kind in a point's run records (`runs/`, copied from reports/runs)."""
    minutes: dict[str, float] = {}
    for run in sorted((records / point.name / "runs").glob("*.json")):
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


def plot_success(data: dict[Point, dict], out: Path) -> None:
    """One line per method and place its configurations were chosen: solid for the default's, dashed
    with hollow markers of its own for each re-tuning's (each nudged right a step further, so that
    none hides another)."""
    fig, ax = plt.subplots(figsize=(8.6, 4.2))
    per_point = {point: success(b) for point, b in data.items()}
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    retunings = sorted({p.chosen_at for p in data} - {DEFAULT_DATA})
    style = {at: {"marker": m, "mfc": "none", "ls": "--"} for at, m in zip(retunings, itertools.cycle("Ds^v"))}
    nudge = {DEFAULT_DATA: 1.0} | {at: 1.08 ** (i + 1) for i, at in enumerate(retunings)}
    for (method, name), color in zip(METHODS.items(), colors):
        for at in [DEFAULT_DATA, *retunings]:
            xs = [p for p, s in per_point.items() if p.chosen_at == at and method in s]
            if not xs:
                continue
            means, stds = zip(*(per_point[p][method] for p in xs))
            ax.errorbar(
                [p.trajectories * nudge[at] for p in xs],
                means,
                yerr=stds,
                capsize=3,
                color=color,
                **({"marker": "o", "label": name} if at == DEFAULT_DATA else style[at]),
            )
    for at in retunings:
        ax.plot([], [], color="gray", label=f"configurations chosen on validation at {at:,}", **style[at])
    ns = sorted({p.trajectories for p in data})
    ax.set_xscale("log")
    ax.set_xlabel("offline trajectories")
    ax.set_ylabel("test success (%), mean ± std over seeds")
    ax.set_xticks(ns, [f"{n:,}" for n in ns])
    ax.xaxis.set_minor_formatter(NullFormatter())  # only the points are labelled
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))  # beside the plot: it hid points
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def plot_critics(data: dict[Point, dict], out: Path) -> None:
    # One point per amount of data: re-tuning the policies leaves the critics as they were.
    data = {p.trajectories: b for p, b in data.items() if not p.name.endswith("-tuned")}
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


def tables(data: dict[Point, dict], records: Path = RECORDS) -> str:
    head = "| method | " + " | ".join(map(column_label, data)) + " |\n|---|" + "---|" * len(data) + "\n"
    successes = [success(b) for b in data.values()]
    gaps = [differences(b) for b in data.values()]
    rows = "".join(
        row(name, ["{:.1f} ± {:.1f}".format(*s[method]) if method in s else "—" for s in successes])
        for method, name in METHODS.items()
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
