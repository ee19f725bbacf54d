"""Does the critic tell good actions from bad ones, and do its step pairs teach anything?

Given each candidate's label (good or bad at its state: `sweetflow.backend.diagnosis`), two
figures judge a critic without playing anything out:

- good-vs-bad accuracy: over every (good, bad) combination of candidates at the same state, the
  share the critic scores the good one higher (a tie counts half). Within a state it is the ROC AUC
  of the critic's scores for good against bad; pooled over states, every combination weighs the same.
- the step pairs' make-up: `informative` pairs put a good action (chosen) against a bad one;
  `inverted` ones the other way round; the rest compare two actions of the same label and teach the
  policy nothing about what matters.
"""

from __future__ import annotations

import polars as pl


def good_vs_bad_accuracy(ranked: pl.DataFrame, labels: pl.DataFrame) -> dict:
    """`ranked`: state_id, candidate, score; `labels`: state_id, candidate, good."""
    scored = ranked.join(labels.select("state_id", "candidate", "good"), on=["state_id", "candidate"])
    good = scored.filter(pl.col("good")).select("state_id", good_score="score")
    bad = scored.filter(~pl.col("good")).select("state_id", bad_score="score")
    combos = good.join(bad, on="state_id")
    wins = (combos["good_score"] > combos["bad_score"]).cast(pl.Float64) + 0.5 * (
        combos["good_score"] == combos["bad_score"]
    ).cast(pl.Float64)
    mixed = scored.group_by("state_id").agg(pl.col("good").any() & (~pl.col("good")).any())
    return {
        "states": mixed.height,
        "states_mixed": int(mixed["good"].sum()),
        "good_share": round(float(scored["good"].mean()), 4) if scored.height else None,
        "good_vs_bad_combinations": combos.height,
        "good_vs_bad_accuracy": round(float(wins.mean()), 4) if combos.height else None,
    }


def pair_makeup(pairs: pl.DataFrame, labels: pl.DataFrame) -> dict:
    """`pairs`: state_id, chosen, rejected (candidate indices); `labels`: state_id, candidate, good."""
    good = labels.select("state_id", "candidate", "good")
    joined = pairs.join(good.rename({"candidate": "chosen", "good": "chosen_good"}), on=["state_id", "chosen"]).join(
        good.rename({"candidate": "rejected", "good": "rejected_good"}), on=["state_id", "rejected"]
    )
    n = joined.height
    informative = int((joined["chosen_good"] & ~joined["rejected_good"]).sum())
    inverted = int((~joined["chosen_good"] & joined["rejected_good"]).sum())
    both_good = int((joined["chosen_good"] & joined["rejected_good"]).sum())

    def share(k: int) -> float | None:
        return round(k / n, 4) if n else None

    return {
        "pairs_labelled": n,
        "informative_pair_share": share(informative),
        "inverted_pair_share": share(inverted),
        "both_good_pair_share": share(both_good),
        "both_bad_pair_share": share(n - informative - inverted - both_good),
    }


def kind_shares(labels: pl.DataFrame) -> dict[str, float]:
    """The share of each label kind (new_fact, premature, closer, ...) among the labelled candidates."""
    return {k: round(c / labels.height, 4) for k, c in sorted(labels["kind"].value_counts().rows())}
