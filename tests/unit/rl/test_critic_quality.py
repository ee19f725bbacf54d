"""The critic's mechanism metrics on hand-built scores and labels."""

from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from sweetflow.rl.critic_quality import LENGTH_MATCH, good_vs_bad_accuracy, length_and_controls, pair_makeup

LABELS = pl.DataFrame(
    {
        "state_id": ["a", "a", "a", "b", "b", "c", "c"],
        "candidate": [0, 1, 2, 0, 1, 0, 1],
        "good": [True, False, False, True, True, False, False],
    }
)


def test_accuracy_counts_every_good_bad_combination_within_a_state_and_ties_as_half():
    ranked = LABELS.select("state_id", "candidate").with_columns(score=pl.Series([0.5, 0.1, 0.5, 1.0, 2.0, 0.0, 1.0]))
    out = good_vs_bad_accuracy(ranked, LABELS)
    # state a: good 0.5 beats bad 0.1, ties bad 0.5: (1 + 0.5) / 2; states b and c have no combination
    assert out["good_vs_bad_combinations"] == 2 and out["good_vs_bad_accuracy"] == 0.75
    assert out["states"] == 3 and out["states_mixed"] == 1 and out["good_share"] == round(3 / 7, 4)


def test_pairs_are_informative_inverted_or_between_equals():
    pairs = pl.DataFrame(
        {"state_id": ["a", "a", "a", "b", "c"], "chosen": [0, 1, 1, 1, 1], "rejected": [1, 0, 2, 0, 0]}
    )
    out = pair_makeup(pairs, LABELS)
    assert out == {
        "pairs_labelled": 5,
        "informative_pair_share": 0.2,
        "inverted_pair_share": 0.2,
        "both_good_pair_share": 0.2,
        "both_bad_pair_share": 0.4,
    }


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.floats(-5, 5, allow_nan=False)), min_size=2, max_size=16))
def test_accuracy_is_one_when_every_good_action_outscores_every_bad_one_and_zero_when_reversed(rows):
    labels = pl.DataFrame(
        {"state_id": ["s"] * len(rows), "candidate": list(range(len(rows))), "good": [g for g, _ in rows]}
    )
    separated = labels.with_columns(score=pl.when(pl.col("good")).then(10.0).otherwise(-10.0))
    reversed_ = labels.with_columns(score=-pl.col("good").cast(pl.Float64))
    combos = sum(g for g, _ in rows) * sum(not g for g, _ in rows)
    if combos:
        assert good_vs_bad_accuracy(separated.drop("good"), labels)["good_vs_bad_accuracy"] == 1.0
        assert good_vs_bad_accuracy(reversed_.drop("good"), labels)["good_vs_bad_accuracy"] == 0.0
    else:
        assert good_vs_bad_accuracy(separated.drop("good"), labels)["good_vs_bad_accuracy"] is None


def scored_frame(rows: list[tuple[str, int, bool, float, int, float]]) -> pl.DataFrame:
    """critic_quality's scored.parquet: state, candidate, good, the critic's score, tokens, the base's log-prob."""
    names = ["state_id", "candidate", "good", "score", "n_tokens", "base_logprob"]
    return pl.DataFrame([dict(zip(names, r)) for r in rows])


def test_length_matched_accuracy_keeps_only_combinations_within_the_ratio():
    # s1: the good action (5 tokens) beats a long bad one (30) but loses to a bad one of its length (6).
    frame = scored_frame(
        [("s1", 0, True, 1.0, 5, -1.0), ("s1", 1, False, 0.0, 30, -2.0), ("s1", 2, False, 2.0, 6, -0.5)]
    )
    labels = frame.select("state_id", "candidate", "good")
    assert good_vs_bad_accuracy(frame, labels)["good_vs_bad_accuracy"] == 0.5
    matched = good_vs_bad_accuracy(frame, labels, LENGTH_MATCH)
    assert (matched["good_vs_bad_accuracy"], matched["good_vs_bad_combinations"], matched["states_compared"]) == (
        0.0,
        1,
        1,
    )
    out = length_and_controls(frame)
    assert out["length_matched_accuracy"] == 0.0 and out["length_matched_combinations"] == 1
    # Shorter is better wins both combinations (5 < 30, 5 < 6); longer loses both; the base's log-prob of the
    # good action (-1.0) beats the long bad one's (-2.0), not the short bad one's (-0.5).
    assert (out["control_shorter_accuracy"], out["control_longer_accuracy"], out["control_base_logprob_accuracy"]) == (
        1.0,
        0.0,
        0.5,
    )
    assert out["control_shorter_length_matched_accuracy"] == 1.0


def test_a_state_without_a_length_matched_combination_is_left_out():
    frame = scored_frame([("s1", 0, True, 1.0, 4, 0.0), ("s1", 1, False, 0.0, 40, 0.0)])
    matched = good_vs_bad_accuracy(frame, frame.select("state_id", "candidate", "good"), LENGTH_MATCH)
    assert (matched["good_vs_bad_accuracy"], matched["states_compared"], matched["states_mixed"]) == (None, 0, 1)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(["s1", "s2", "s3"]), st.booleans(), st.integers(1, 60)), min_size=2, max_size=24)
)
def test_shorter_and_longer_are_better_always_add_up_to_one(rows):
    """Each combination the shorter-is-better control wins the longer-is-better one loses, a tie is half to each:
    on every set of combinations, all or length-matched, their accuracies sum to 1."""
    frame = scored_frame([(s, k, good, 0.0, n, 0.0) for k, (s, good, n) in enumerate(rows)])
    out = length_and_controls(frame)
    for suffix in ("accuracy", "length_matched_accuracy"):
        shorter, longer = out[f"control_shorter_{suffix}"], out[f"control_longer_{suffix}"]
        assert (shorter is None) == (longer is None)
        if shorter is not None:
            assert abs(shorter + longer - 1) < 1e-3
