"""The critics' mechanism metrics with 95% bootstrap intervals, with against without training-time
information, from a workspace's stage outputs (sweetflow.report.critic_intervals).

    .venv/bin/python scripts/critic_intervals.py                      # backend, with_info vs no_info
    .venv/bin/python scripts/critic_intervals.py --json out.json      # the figures as JSON too

Reads, of the outputs checked out in the workspace (`dvc checkout`, or `dvc exp apply <name>` first),
each critic's data/<domain>/critic_quality/<critic>/scored.parquet (its scores of the labelled
candidates), data/<domain>/critic_check/<critic>/{picked,trajectories}.parquet (its picks, played
out) and its critic_quality metrics (the step pairs' make-up, shown without intervals). Prints one
Markdown table.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import polars as pl
from tqdm import tqdm

from sweetflow.core.definition import definition, output_of
from sweetflow.core.tables import PICKED, SCORED, TRAJECTORIES
from sweetflow.report.critic_intervals import Estimate, accuracy_difference, agreement_interval


def percent(e: Estimate) -> str:
    return f"{100 * e.value:.1f} [{100 * e.low:.1f}, {100 * e.high:.1f}]"


def signed(e: Estimate) -> str:
    return f"{100 * e.value:+.1f} [{100 * e.low:+.1f}, {100 * e.high:+.1f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--domain", default="backend")
    parser.add_argument("--critics", nargs=2, default=["with_info", "no_info"], metavar=("A", "B"))
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    a, b = args.critics
    domain = args.domain

    def scored(critic: str) -> pl.DataFrame:
        return pl.read_parquet(output_of("critic_quality", domain, critic, SCORED))

    def metrics(stage: str, critic: str) -> dict:
        return json.loads(Path(definition(stage, domain, critic).metrics).read_text())

    with tqdm(total=3, desc="bootstrap", unit="figure") as bar:
        accuracy = accuracy_difference(scored(a), scored(b), args.resamples)
        bar.update()
        agreements = {}
        for critic in (a, b):
            picked, outcomes = (
                pl.read_parquet(output_of("critic_check", domain, critic, f)) for f in (PICKED, TRAJECTORIES)
            )
            agreements[critic] = agreement_interval(picked, outcomes, args.resamples)
            bar.update()
    quality = {c: metrics("critic_quality", c) for c in (a, b)}

    rows = [
        ("good-vs-bad accuracy (states with mixed labels)", percent(accuracy["a"]), percent(accuracy["b"]),
         signed(accuracy["a_minus_b"]), f"{accuracy['a'].states}"),
        ("ranking agreement with played-out outcomes (decided states)", percent(agreements[a]),
         percent(agreements[b]), "not paired", f"{agreements[a].states} / {agreements[b].states}"),
    ]  # fmt: skip
    for name, key in (
        ("informative step pairs", "informative_pair_share"),
        ("inverted step pairs", "inverted_pair_share"),
    ):
        rows.append((name, f"{100 * quality[a][key]:.1f}", f"{100 * quality[b][key]:.1f}", "",
                     f"{quality[a]['pairs_labelled']} / {quality[b]['pairs_labelled']} pairs"))  # fmt: skip
    print(f"| {args.domain} critic metric | {a} | {b} | {a} − {b} (paired) | states |")
    print("|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    if args.json:
        figures = {
            "good_vs_bad_accuracy": {k: v.as_dict() for k, v in accuracy.items()},
            "ranking_agreement": {c: e.as_dict() for c, e in agreements.items()},
            "step_pairs": {c: {k: v for k, v in quality[c].items() if k.endswith("pair_share")} for c in (a, b)},
            "critics": {"a": a, "b": b},
            "resamples": args.resamples,
        }
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
