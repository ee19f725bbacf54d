"""Bootstrap intervals of the critics' mechanism metrics: the points are the stages' own figures, a
critic against itself differs by exactly zero, and resampling a state never pairs its copies."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sweetflow.report.critic_intervals import accuracy_difference, agreement_interval, resample_states
from sweetflow.rl.critic_check import agreement
from sweetflow.rl.critic_quality import good_vs_bad_accuracy

# A state: its candidates' (good, score) for two critics.
state = st.lists(st.tuples(st.booleans(), st.integers(-3, 3), st.integers(-3, 3)), min_size=2, max_size=5)


def scored(states: list[list[tuple[bool, int, int]]], which: int) -> pl.DataFrame:
    rows = [
        {"state_id": f"s{i}", "candidate": c, "good": row[0], "score": float(row[which])}
        for i, candidates in enumerate(states)
        for c, row in enumerate(candidates)
    ]
    return pl.DataFrame(
        rows, schema={"state_id": pl.String, "candidate": pl.Int32, "good": pl.Boolean, "score": pl.Float64}
    )


def has_mixed(states) -> bool:
    return any(len({g for g, _, _ in s}) == 2 for s in states)


@settings(max_examples=15, deadline=None)
@given(states=st.lists(state, min_size=1, max_size=8).filter(has_mixed))
def test_the_points_are_the_stage_figures_and_a_critic_ties_itself(states):
    a, b = scored(states, 1), scored(states, 2)
    figures = accuracy_difference(a, b, resamples=20)
    labels = a.select("state_id", "candidate", "good")
    assert figures["a"].value == good_vs_bad_accuracy(a.drop("good"), labels)["good_vs_bad_accuracy"]
    assert figures["b"].value == good_vs_bad_accuracy(b.drop("good"), labels)["good_vs_bad_accuracy"]
    assert figures["a"].low <= figures["a"].high and figures["a_minus_b"].low <= figures["a_minus_b"].high
    same = accuracy_difference(a, a, resamples=20)["a_minus_b"]
    assert (same.value, same.low, same.high) == (0.0, 0.0, 0.0)  # paired: one resample serves both


def test_a_state_drawn_twice_counts_twice_not_four_times():
    frame = scored([[(True, 2, 0), (False, 1, 0)], [(True, 0, 0), (False, 1, 0)]], 1)
    labels = frame.select("state_id", "candidate", "good")
    twice = ["s0", "s0", "s1"]
    result = good_vs_bad_accuracy(
        resample_states(frame.select("state_id", "candidate", "score"), twice), resample_states(labels, twice)
    )
    assert result["good_vs_bad_combinations"] == 3 and result["good_vs_bad_accuracy"] == round(2 / 3, 4)


def test_critics_scored_on_different_candidates_are_not_paired():
    a = scored([[(True, 1, 0), (False, 0, 0)]], 1)
    with pytest.raises(ValueError, match="different labelled candidates"):
        accuracy_difference(a, a.with_columns(good=~pl.col("good")), resamples=5)


def test_agreement_interval_is_around_the_stage_figure():
    picked = pl.DataFrame({"state_id": [f"s{i}" for i in range(6)], "best": [0] * 6, "worst": [1] * 6})
    picked = picked.with_columns(pl.col("best", "worst").cast(pl.Int32))
    rewards = {0: [1, 1, 1, 0, 1, 0], 1: [0, 0, 1, 1, 0, 0]}  # best wins at s0, s1, s4; loses at s3; ties s2, s5
    outcomes = pl.DataFrame(
        {
            "task_id": [f"s{i}#{c}" for c in (0, 1) for i in range(6)],
            "reward": [float(r) for c in (0, 1) for r in rewards[c]],
        }
    )
    estimate = agreement_interval(picked, outcomes, resamples=200)
    assert estimate.value == agreement(picked, outcomes)["ranking_agreement"] == 0.75
    assert estimate.states == 4 and 0.0 <= estimate.low <= 0.75 <= estimate.high <= 1.0


def test_length_matched_comparison_resamples_only_the_states_with_a_matched_combination():
    """A length scorer ties a critic on all combinations and loses on the length-matched ones: the paired
    figures are the stage's length-matched accuracies, over the states that hold such a combination."""
    rows = [  # state, candidate, good, tokens, the critic's score
        ("s0", 0, True, 5, 0.0),
        ("s0", 1, False, 40, 1.0),  # unmatched: the critic gets it wrong, the length scorer right
        ("s1", 0, True, 10, 1.0),
        ("s1", 1, False, 12, 0.0),  # matched: the critic right
        ("s2", 0, True, 20, 1.0),
        ("s2", 1, False, 18, 0.0),  # matched: the critic right, the length scorer wrong
    ]
    critic = pl.DataFrame(
        [{"state_id": s, "candidate": c, "good": g, "n_tokens": n, "score": x} for s, c, g, n, x in rows]
    )
    shorter = critic.with_columns(score=-pl.col("n_tokens").cast(pl.Float64))
    labels = critic.select("state_id", "candidate", "good")
    everything = accuracy_difference(critic, shorter, resamples=50)
    matched = accuracy_difference(critic, shorter, resamples=50, length_match=1.5)
    assert (everything["a"].value, everything["b"].value, everything["a"].states) == (
        round(2 / 3, 4),
        round(2 / 3, 4),
        3,
    )
    assert (matched["a"].value, matched["b"].value, matched["a"].states) == (1.0, 0.5, 2)
    assert matched["a"].value == good_vs_bad_accuracy(critic, labels, 1.5)["good_vs_bad_accuracy"]
    assert matched["a_minus_b"].value == 0.5
