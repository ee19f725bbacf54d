"""A method's metrics on a set of trajectories, and over the seeds of its checkpoints."""

from __future__ import annotations

import statistics

import polars as pl

from sweetflow.domain import get_domain

# Counts add up over seeds; every other metric is averaged.
COUNTS = ("count", "failures", "context_full")


def summarize_episodes(frame: pl.DataFrame, domain: str, tasks: list[dict]) -> dict:
    """The domain's headline metrics (`Domain.summarize`), then what every domain shares: episodes,
    mean agent turns, the share that followed the protocol (answered with the marker), dialogues
    that filled the model's context and episodes that failed."""
    n = frame.height
    return {
        **get_domain(domain).summarize(frame, tasks),
        "count": n,
        "mean_turns": float(frame["n_turns"].mean()) if n else 0.0,
        "protocol_followed": float(frame["answered"].mean()) if n else 0.0,
        "context_full": int((frame["ended_by"] == "context").sum()),
        "failures": int(frame["failure"].is_not_null().sum()),
    }


def over_seeds(per_seed: dict[int, dict], domain: str) -> dict:
    """One method's metrics over its seeds: each metric's mean, the sample standard deviation of the
    domain's headline metrics (0 for one seed), counts summed, and every seed's own metrics."""
    runs = list(per_seed.values())
    out = {}
    for key in runs[0]:
        values = [run[key] for run in runs]
        out[key] = sum(values) if key in COUNTS else sum(values) / len(values)
    for key in get_domain(domain).headline:
        out[f"{key}_std"] = statistics.stdev(run[key] for run in runs) if len(runs) > 1 else 0.0
    out["seeds"] = {str(seed): run for seed, run in per_seed.items()}
    return out
