"""Does the critic tell good actions from bad ones, and do its step pairs teach anything?

Given each candidate's label (good or bad at its state: `sweetflow.backend.diagnosis`), two
figures judge a critic without playing anything out:

- good-vs-bad accuracy: over every (good, bad) combination of candidates at the same state, the
  share the critic scores the good one higher (a tie counts half). Within a state it is the ROC AUC
  of the critic's scores for good against bad; pooled over states, every combination weighs the same.
- the step pairs' make-up: `informative` pairs put a good action (chosen) against a bad one;
  `inverted` ones the other way round; the rest compare two actions of the same label and teach the
  policy nothing about what matters.

Length can stand in for judgement: a question is short and mostly good, an early answer long and
mostly bad. So the accuracy is also measured on the length-matched combinations alone (the longer of
the two at most `LENGTH_MATCH` times the shorter), and beside it the controls, scorers that read no
dialogue: shorter-is-better, longer-is-better and the base policy's own mean log-probability of the
action (recorded when it sampled the candidate). A critic that only beats them on all combinations
has learnt length.
"""

from __future__ import annotations

import polars as pl

# Two actions are length-matched when the longer has at most this many times the shorter's tokens.
LENGTH_MATCH = 1.5
# The controls: scorers that read no dialogue, as a critic's score would be read (higher is better).
CONTROLS = {
    "shorter": -pl.col("n_tokens").cast(pl.Float64),
    "longer": pl.col("n_tokens").cast(pl.Float64),
    "base_logprob": pl.col("base_logprob"),
}


def combinations(ranked: pl.DataFrame, labels: pl.DataFrame, length_match: float | None = None) -> pl.DataFrame:
    """Every (good, bad) combination of candidates at a state: state_id, good_score, bad_score; with
    `length_match` (`ranked` then has n_tokens) only those whose lengths are within that ratio."""
    scored = ranked.join(labels.select("state_id", "candidate", "good"), on=["state_id", "candidate"])
    kept = ["state_id", "score", *(["n_tokens"] if length_match else [])]
    good = scored.filter(pl.col("good")).select(kept).rename({"score": "good_score"})
    bad = scored.filter(~pl.col("good")).select(kept).rename({"score": "bad_score"})
    combos = good.join(bad, on="state_id", suffix="_bad")
    if length_match:
        longer, shorter = pl.max_horizontal("n_tokens", "n_tokens_bad"), pl.min_horizontal("n_tokens", "n_tokens_bad")
        combos = combos.filter(longer <= length_match * shorter)
    return combos.select("state_id", "good_score", "bad_score")


def good_vs_bad_accuracy(ranked: pl.DataFrame, labels: pl.DataFrame, length_match: float | None = None) -> dict:
    """`ranked`: state_id, candidate, score (and n_tokens, with `length_match`); `labels`: state_id, candidate,
    good. With `length_match`, only the length-matched (good, bad) combinations count (`combinations`)."""
    scored = ranked.join(labels.select("state_id", "candidate", "good"), on=["state_id", "candidate"])
    combos = combinations(ranked, labels, length_match)
    wins = (combos["good_score"] > combos["bad_score"]).cast(pl.Float64) + 0.5 * (
        combos["good_score"] == combos["bad_score"]
    ).cast(pl.Float64)
    mixed = scored.group_by("state_id").agg(pl.col("good").any() & (~pl.col("good")).any())
    return {
        "states": mixed.height,
        "states_mixed": int(mixed["good"].sum()),
        "states_compared": combos["state_id"].n_unique(),  # the mixed ones, or those with a length-matched combination
        "good_share": round(float(scored["good"].mean()), 4) if scored.height else None,
        "good_vs_bad_combinations": combos.height,
        "good_vs_bad_accuracy": round(float(wins.mean()), 4) if combos.height else None,
    }


def length_and_controls(scored: pl.DataFrame) -> dict:
    """The critic's accuracy on the length-matched combinations, and each control's on all combinations and on the
    length-matched ones. `scored`: critic_quality's scored.parquet (state_id, candidate, good, score, n_tokens,
    base_logprob)."""
    labels = scored.select("state_id", "candidate", "good")
    matched = good_vs_bad_accuracy(scored, labels, LENGTH_MATCH)
    out = {
        "length_matched_accuracy": matched["good_vs_bad_accuracy"],
        "length_matched_combinations": matched["good_vs_bad_combinations"],
        "length_matched_states": matched["states_compared"],
    }
    for name, score in CONTROLS.items():
        control = scored.with_columns(score=score)
        out[f"control_{name}_accuracy"] = good_vs_bad_accuracy(control, labels)["good_vs_bad_accuracy"]
        out[f"control_{name}_length_matched_accuracy"] = good_vs_bad_accuracy(control, labels, LENGTH_MATCH)[
            "good_vs_bad_accuracy"
        ]
    return out


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
