"""Pair building (sweetflow/rl/pairs.py) on hand-built frames: the official trajectory rules, turn-state
sampling and step pairs drawn from the right halves, deterministically."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sweetflow.core.tables import TRAJECTORY_SCHEMA
from sweetflow.rl.pairs import length_bias, sample_turn_states, step_pairs, trajectory_pairs, turn_states


def traj(
    task_id: str, sample: int, reward: float, n_turns: int = 2, failure: str | None = None, marked: bool = True
) -> dict:
    """A trajectory row; `marked=False` gives a reward without a pass mark (`success` null: a similarity)."""
    dialogue = []
    for t in range(n_turns):
        dialogue.append({"role": "agent", "content": f"question {t}"})
        if t < n_turns - 1:
            dialogue.append({"role": "human", "content": f"reply {t}"})
    return {
        "task_id": task_id,
        "sample": sample,
        "seed": 0,
        "dialogue": dialogue,
        "answer": "",
        "answered": True,
        "n_turns": n_turns,
        "reward": reward,
        "success": reward == 1.0 if marked else None,
        "score_status": "ok",
        "failure": failure,
    }


def frame(*rows: dict) -> pl.DataFrame:
    return pl.DataFrame(list(rows), schema=TRAJECTORY_SCHEMA, orient="row")


def pairs_of(result: pl.DataFrame) -> list[tuple]:
    return result.select("task_id", "chosen_sample", "rejected_sample").rows()


# --- trajectory pairs -------------------------------------------------------------------------------


def test_backend_pairs_the_best_successful_sample_with_each_strictly_worse_one():
    trajectories = frame(
        traj("a", 0, 0.5),
        traj("a", 1, 1.0),
        traj("a", 2, 0.0),  # best = 1: pairs (1, 0), (1, 2)
        traj("b", 0, 0.9),
        traj("b", 1, 0.3),  # best 0.9 < 1: no pair
        traj("c", 0, 0.0),
        traj("c", 1, 0.0),  # every sample failed: no pair
        traj("d", 0, 1.0),
        traj("d", 1, 1.0),  # all succeed: nothing is strictly worse
    )
    result = trajectory_pairs(trajectories)
    assert pairs_of(result) == [("a", 1, 0), ("a", 1, 2)]
    assert result.select("chosen_reward", "rejected_reward").rows() == [(1.0, 0.5), (1.0, 0.0)]


def test_backend_ties_for_best_go_to_the_lowest_sample_and_the_other_best_is_not_rejected():
    trajectories = frame(traj("a", 2, 1.0), traj("a", 0, 1.0), traj("a", 1, 0.7))
    assert pairs_of(trajectory_pairs(trajectories)) == [("a", 0, 1)]  # not (0, 2): 2 ties with the best


def similarities(*rows: dict) -> pl.DataFrame:
    """Frontend-shaped trajectories: rewards without a pass mark."""
    return frame(*({**row, "success": None} for row in rows))


def test_failed_episodes_are_neither_chosen_nor_rejected():
    rows = (traj("a", 0, 1.0), traj("a", 1, 0.0, failure="simulator: timeout"), traj("a", 2, 0.4))
    assert pairs_of(trajectory_pairs(frame(*rows))) == [("a", 0, 2)]
    assert pairs_of(trajectory_pairs(similarities(*rows))) == [("a", 0, 2)]


def test_frontend_pairs_every_two_samples_at_least_min_gap_apart():
    # Rewards 0.9, 0.85, 0.7, 0.3: gaps ≥ 0.1 are 0.9−0.7, 0.9−0.3, 0.85−0.7 (= 0.15), 0.85−0.3, 0.7−0.3;
    # 0.9−0.85 = 0.05 is too close. Higher reward is chosen. No success threshold.
    rows = (traj("a", 0, 0.7), traj("a", 1, 0.9), traj("a", 2, 0.3), traj("a", 3, 0.85), traj("b", 0, 0.5))
    result = trajectory_pairs(similarities(*rows))
    assert pairs_of(result) == [("a", 0, 2), ("a", 1, 0), ("a", 1, 2), ("a", 3, 0), ("a", 3, 2)]
    assert pairs_of(trajectory_pairs(similarities(*rows), min_gap=0.5)) == [("a", 1, 2), ("a", 3, 2)]
    # The same rewards with a pass mark follow the backend rule: no sample reaches 1, no pair.
    assert trajectory_pairs(frame(*rows)).height == 0


def test_frontend_gap_of_exactly_min_gap_counts_despite_float_rounding():
    # 0.3 − 0.2 = 0.09999999999999998 in floats; it is a gap of 0.1.
    assert pairs_of(trajectory_pairs(similarities(traj("a", 0, 0.2), traj("a", 1, 0.3)))) == [("a", 1, 0)]


def test_trajectory_pairs_reject_bad_arguments():
    with pytest.raises(ValueError, match="mix rewards with a pass mark"):
        trajectory_pairs(pl.concat([frame(traj("a", 0, 1.0)), similarities(traj("a", 1, 0.5))]))
    with pytest.raises(ValueError, match="min_gap"):
        trajectory_pairs(similarities(traj("a", 0, 1.0)), min_gap=0.0)
    with pytest.raises(ValueError, match="lack column"):
        trajectory_pairs(pl.DataFrame({"task_id": ["a"], "reward": [1.0]}))


# --- turn states ------------------------------------------------------------------------------------


def test_turn_states_are_the_agent_turns_with_their_dialogue_positions():
    # Dialogue of a 3-turn trajectory: agent(0) human(1) agent(2) human(3) agent(4).
    trajectories = frame(traj("a", 1, 0.0, n_turns=3), traj("a", 0, 1.0, n_turns=1), traj("b", 0, 0.0, failure="x"))
    states = turn_states(trajectories)
    assert states.rows() == [
        ("a:0:0", "a", 0, 0, 0),
        ("a:1:0", "a", 1, 0, 0),
        ("a:1:1", "a", 1, 1, 2),
        ("a:1:2", "a", 1, 2, 4),
    ]


MANY = frame(*[traj(f"t{i:02d}", s, 0.0, n_turns=1 + (i + s) % 4) for i in range(20) for s in range(3)])


def test_sample_turn_states_takes_the_share_deterministically_by_seed():
    everything = turn_states(MANY)
    sampled = sample_turn_states(MANY, 0.1, seed=7)
    assert sampled.height == round(0.1 * everything.height)
    assert sampled.equals(sample_turn_states(MANY, 0.1, seed=7))
    assert not sampled.equals(sample_turn_states(MANY, 0.1, seed=8))
    assert set(sampled["state_id"]) <= set(everything["state_id"])
    assert sampled.equals(sampled.sort("task_id", "sample", "turn"))
    assert sample_turn_states(MANY, 1.0, seed=0).equals(everything)
    assert sample_turn_states(frame(traj("a", 0, 0.0, n_turns=3)), 0.01, seed=0).height == 1  # at least one


def test_the_official_rule_takes_every_turn_of_the_first_trajectories():
    taken = sample_turn_states(MANY, 0.1, seed=7, rule="first_trajectories")
    first = MANY.head(6).select("task_id", "sample").rows()  # 10% of 60 trajectories, in file order
    assert sorted(set(taken.select("task_id", "sample").rows())) == sorted(first)
    assert taken.equals(turn_states(MANY.head(6)))
    assert taken.equals(sample_turn_states(MANY, 0.1, seed=8, rule="first_trajectories"))  # no draw
    with pytest.raises(ValueError, match="rule"):
        sample_turn_states(MANY, 0.1, seed=0, rule="last")


def test_sample_turn_states_rejects_a_share_outside_0_1():
    for share in (0.0, 1.5):
        with pytest.raises(ValueError, match="share"):
            sample_turn_states(MANY, share, seed=0)


# --- step pairs -------------------------------------------------------------------------------------


def candidates(scores_by_state: dict[str, list[float]]) -> pl.DataFrame:
    rows = [(s, i, score) for s, scores in scores_by_state.items() for i, score in enumerate(scores)]
    return pl.DataFrame(rows, schema={"state_id": pl.String, "candidate": pl.Int64, "score": pl.Float64}, orient="row")


def test_step_pairs_by_hand():
    # Scores 0.1, 0.9, 0.5, −0.3 → best first: 1 (0.9), 2 (0.5) | 0 (0.1), 3 (−0.3).
    # Top half {1, 2}, bottom half {0, 3}: 4 combinations, all drawn when num_pairs ≥ 4.
    result = step_pairs(candidates({"s": [0.1, 0.9, 0.5, -0.3]}), num_pairs=4, seed=0)
    assert result.select("chosen", "rejected").rows() == [(1, 0), (1, 3), (2, 0), (2, 3)]
    assert result.select("chosen_score", "rejected_score").rows() == [(0.9, 0.1), (0.9, -0.3), (0.5, 0.1), (0.5, -0.3)]
    assert step_pairs(candidates({"s": [0.1, 0.9, 0.5, -0.3]}), num_pairs=9, seed=0).height == 4  # at most all


def test_largest_gaps_keeps_as_many_pairs_as_halves_where_the_critic_is_surest():
    # State s: best first 1 (0.9), 2 (0.5) | 0 (0.1), 3 (−0.3): gaps 1.2, 0.8, 0.8, 0.4.
    # State t: best first 1 (0.2) | 0 (0.1): gap 0.1. Budget: 1 pair a state, 2 in all.
    table = candidates({"s": [0.1, 0.9, 0.5, -0.3], "t": [0.1, 0.2]})
    result = step_pairs(table, num_pairs=1, seed=0, rule="largest_gaps", max_per_state=8)
    assert result.select("state_id", "chosen", "rejected").rows() == [
        ("s", 1, 0),
        ("s", 1, 3),
    ]  # 1.2, then 0.8 by index
    capped = step_pairs(table, num_pairs=1, seed=0, rule="largest_gaps", max_per_state=1)
    assert capped.select("state_id", "chosen", "rejected").rows() == [("s", 1, 3), ("t", 1, 0)]
    assert step_pairs(table, num_pairs=1, seed=7, rule="largest_gaps").equals(result)  # nothing drawn
    with pytest.raises(ValueError, match="rule"):
        step_pairs(table, num_pairs=1, seed=0, rule="random")


@settings(max_examples=40, deadline=None)
@given(
    st.dictionaries(
        st.text("abc", min_size=1, max_size=3),
        st.lists(st.floats(-10, 10, allow_nan=False), min_size=2, max_size=16),
        min_size=1,
        max_size=5,
    ),
    st.integers(1, 6),
    st.integers(1, 10),
)
def test_largest_gaps_takes_the_largest_gaps_of_the_halves_combinations(scores_by_state, num_pairs, cap):
    table = candidates(scores_by_state)
    every = step_pairs(table, num_pairs=10_000, seed=0)  # halves with no limit: every combination
    chosen = step_pairs(table, num_pairs, seed=0, rule="largest_gaps", max_per_state=cap)
    assert chosen.join(every, on=["state_id", "chosen", "rejected"], how="anti").is_empty()  # a subset
    assert chosen.height <= num_pairs * len(scores_by_state)
    assert chosen.group_by("state_id").len()["len"].max() <= cap if chosen.height else True
    gaps = lambda f: (f["chosen_score"] - f["rejected_score"]).to_list()  # noqa: E731
    left = every.join(chosen, on=["state_id", "chosen", "rejected"], how="anti")
    full = {s for s, n in chosen.group_by("state_id").len().rows() if n >= cap}
    # Whatever was left out had no larger gap than the smallest kept, unless its state was full.
    open_left = left.filter(~pl.col("state_id").is_in(list(full)))
    if chosen.height == num_pairs * len(scores_by_state) and open_left.height:
        assert max(gaps(open_left)) <= min(gaps(chosen))
    elif open_left.height:  # fewer kept than the budget: nothing was left out but for full states
        assert False, "pairs were left out although the budget was not spent"


def test_odd_counts_leave_the_median_out_and_ties_give_no_pair():
    # 5 candidates, best first: 4 (5), 3 (4) | 2 (3, the median, in neither half) | 1 (2), 0 (1).
    result = step_pairs(candidates({"s": [1.0, 2.0, 3.0, 4.0, 5.0]}), num_pairs=10, seed=0)
    assert result.select("chosen", "rejected").rows() == [(3, 0), (3, 1), (4, 0), (4, 1)]
    # All tied: no preference at all. Ties across the halves: only the combinations with a gap.
    assert step_pairs(candidates({"s": [1.0] * 6}), num_pairs=4, seed=0).is_empty()
    # Scores 2, 1, 1, 1 → best first 0 (2), 1 (1) | 2 (1), 3 (1): only 0 beats anything.
    tied = step_pairs(candidates({"s": [2.0, 1.0, 1.0, 1.0]}), num_pairs=4, seed=0)
    assert tied.select("chosen", "rejected").rows() == [(0, 2), (0, 3)]
    assert step_pairs(candidates({"s": [1.0]}), num_pairs=4, seed=0).is_empty()  # one candidate: no pair


@settings(max_examples=40, deadline=None)
@given(
    st.dictionaries(
        st.text("abc", min_size=1, max_size=3),
        st.lists(st.floats(-10, 10, allow_nan=False), min_size=2, max_size=16),
        min_size=1,
        max_size=5,
    ),
    st.integers(1, 6),
    st.integers(0, 2**32),
)
def test_step_pairs_come_from_the_right_halves_and_depend_only_on_seed_and_state(scores_by_state, num_pairs, seed):
    table = candidates(scores_by_state)
    result = step_pairs(table, num_pairs, seed)
    for state, scores in scores_by_state.items():
        best_first = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
        half = len(scores) // 2
        top, bottom = set(best_first[:half]), set(best_first[len(scores) - half :])
        drawn = result.filter(pl.col("state_id") == state)
        assert drawn.height <= num_pairs
        assert not drawn.select("chosen", "rejected").is_duplicated().any()
        for _, chosen, rejected, chosen_score, rejected_score in drawn.rows():
            assert chosen in top and rejected in bottom and chosen_score > rejected_score
        # A state's pairs do not depend on which other states are in the table.
        alone = step_pairs(table.filter(pl.col("state_id") == state), num_pairs, seed)
        assert alone.equals(drawn)
    assert step_pairs(table.reverse(), num_pairs, seed).equals(result)  # row order does not matter


def test_chosen_and_rejected_are_drawn_uniformly_from_their_halves():
    # 8 distinct candidates, one pair per state, 400 states: each of the 4 top candidates should be
    # chosen about 100 times, each bottom one rejected about 100 times.
    table = candidates({f"s{i:03d}": [7.0, 6.0, 5.0, 4.0, 3.0, 2.0, 1.0, 0.0] for i in range(400)})
    result = step_pairs(table, num_pairs=1, seed=3)
    chosen = result["chosen"].value_counts().sort("chosen")
    rejected = result["rejected"].value_counts().sort("rejected")
    assert chosen["chosen"].to_list() == [0, 1, 2, 3] and rejected["rejected"].to_list() == [4, 5, 6, 7]
    assert chosen["count"].min() > 70 and rejected["count"].min() > 70


def test_step_pairs_reject_bad_input():
    with pytest.raises(ValueError, match="NaN"):
        step_pairs(candidates({"s": [1.0, float("nan")]}), 4, 0)
    with pytest.raises(ValueError, match="once"):
        step_pairs(pl.concat([candidates({"s": [1.0, 2.0]})] * 2), 4, 0)
    with pytest.raises(ValueError, match="num_pairs"):
        step_pairs(candidates({"s": [1.0, 2.0]}), 0, 0)


def test_length_bias_is_measured_within_states():
    # Within each state the longer candidate scores higher (r = +1), though the long state's
    # candidates score lower than the short state's: pooled, the correlation would be negative.
    ranked = pl.DataFrame(
        {
            "state_id": ["a", "a", "b", "b"],
            "candidate": [0, 1, 0, 1],
            "n_tokens": [10, 20, 100, 110],
            "score": [5.0, 6.0, 1.0, 2.0],
        }
    )
    pairs = pl.DataFrame({"state_id": ["a", "b"], "chosen": [1, 1], "rejected": [0, 0]})
    bias = length_bias(ranked, pairs)
    assert bias == {"score_length_corr": pytest.approx(1.0), "chosen_tokens": 65.0, "rejected_tokens": 55.0}
    assert ranked.select(pl.corr("n_tokens", "score")).item() < 0


def test_length_bias_is_absent_without_variation_or_pairs():
    ranked = pl.DataFrame(
        {"state_id": ["a"] * 3, "candidate": [0, 1, 2], "n_tokens": [10] * 3, "score": [1.0, 2.0, 3.0]}
    )
    pairs = pl.DataFrame({"state_id": ["a"], "chosen": [2], "rejected": [0]})
    assert length_bias(ranked, pairs) == {"score_length_corr": None, "chosen_tokens": 10.0, "rejected_tokens": 10.0}
    assert length_bias(ranked, pairs.clear())["chosen_tokens"] is None


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.floats(-5, 5), st.integers(1, 60)), min_size=2, max_size=16), st.floats(1.0, 3.0))
def test_length_matched_pairs_are_halves_pairs_of_similar_length(drawn, ratio):
    ranked = pl.DataFrame(
        {
            "state_id": ["s"] * len(drawn),
            "candidate": list(range(len(drawn))),
            "score": [s for s, _ in drawn],
            "n_tokens": [n for _, n in drawn],
        }
    )
    matched = step_pairs(ranked, num_pairs=4, seed=0, rule="length_matched", max_length_ratio=ratio)
    tokens = dict(zip(ranked["candidate"].to_list(), ranked["n_tokens"].to_list()))
    every = step_pairs(ranked, num_pairs=10**4, seed=0, rule="halves")
    allowed = {
        (c, r)
        for c, r in every.select("chosen", "rejected").iter_rows()
        if max(tokens[c], tokens[r]) <= ratio * min(tokens[c], tokens[r])
    }
    got = set(matched.select("chosen", "rejected").iter_rows())
    assert got <= allowed and len(got) == min(4, len(allowed))


def test_length_matched_needs_token_counts():
    ranked = pl.DataFrame({"state_id": ["s", "s"], "candidate": [0, 1], "score": [1.0, 0.0]})
    with pytest.raises(ValueError, match="n_tokens"):
        step_pairs(ranked, num_pairs=1, seed=0, rule="length_matched")
