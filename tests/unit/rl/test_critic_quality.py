"""The critic's mechanism metrics on hand-built scores and labels."""

from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from sweetflow.rl.critic_quality import good_vs_bad_accuracy, pair_makeup

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
