"""Paired two-level bootstrap intervals (tasks and seeds), against hand-built cases with known answers."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sweetflow.core.errors import InputError
from sweetflow.report.intervals import method_intervals, paired_bootstrap, task_means


def tasks(values) -> dict[str, float]:
    return {f"t{i:03d}": float(v) for i, v in enumerate(values)}


def one_seed(values) -> dict[str, dict[str, float]]:
    return {"seed0": tasks(values)}


def test_identical_methods_differ_by_exactly_zero():
    a = one_seed([0, 1, 1, 0, 0.5])
    i = paired_bootstrap(a, dict(a))
    assert (i.difference, i.low, i.high, i.excludes_zero) == (0.0, 0.0, 0.0, False)


def test_a_constant_shift_is_the_whole_interval():
    a = tasks([0.2, 0.5, 0.1, 0.9])
    i = paired_bootstrap({"seed0": {t: v + 0.1 for t, v in a.items()}}, {"seed0": a})
    assert i.difference == pytest.approx(0.1) and i.low == pytest.approx(0.1) and i.high == pytest.approx(0.1)
    assert i.excludes_zero


def test_pairing_removes_the_task_variance():
    """Task difficulty varies widely, but B is A minus 0.05 on every other task: the paired interval
    stays narrow and above 0, where comparing the two means unpaired would not resolve it."""
    rng = np.random.default_rng(1)
    hard = rng.uniform(0, 1, 300)
    a = tasks(hard)
    b = {t: v - 0.05 * (k % 2) for k, (t, v) in enumerate(a.items())}
    i = paired_bootstrap({"seed0": a}, {"seed0": b})
    assert i.difference == pytest.approx(0.025)
    assert 0 < i.low < 0.025 < i.high < 0.05


def test_the_half_width_matches_the_normal_approximation():
    d = np.array([1.0, -1.0] * 200)  # mean 0, sd 1, n 400: half-width 1.96 / 20
    i = paired_bootstrap(one_seed(d), one_seed(np.zeros_like(d)), resamples=20_000)
    assert (i.high - i.low) / 2 == pytest.approx(1.96 / 20, rel=0.05)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=1, max_size=40))
def test_the_interval_holds_the_difference_and_swapping_negates_it(pairs):
    a, b = one_seed([p[0] for p in pairs]), one_seed([p[1] for p in pairs])
    i, j = paired_bootstrap(a, b, resamples=500), paired_bootstrap(b, a, resamples=500)
    assert i.low - 1e-12 <= i.difference <= i.high + 1e-12
    assert j.difference == pytest.approx(-i.difference, abs=1e-12)
    assert math.isclose(j.low, -i.high, abs_tol=1e-9) and math.isclose(j.high, -i.low, abs_tol=1e-9)


def test_different_task_sets_are_refused():
    with pytest.raises(InputError, match="different tasks"):
        paired_bootstrap(one_seed([1, 0]), one_seed([1, 0, 1]), ("sweet", "rft"))


def test_every_seed_must_hold_the_same_tasks_and_the_error_names_the_seed():
    a = {"trajectories-seed0": tasks([1, 0, 1]), "trajectories-seed1": tasks([1, 0])}
    with pytest.raises(InputError, match="sweet's trajectories-seed1"):
        paired_bootstrap(a, one_seed([0, 0, 1]), ("sweet", "rft"))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=1, max_size=30), st.integers(2, 4))
def test_seeds_that_agree_give_the_one_seed_interval(pairs, copies):
    """A method's seeds that are copies of one another carry no seed variance: the interval is the task
    bootstrap's, to the last digit (the tasks are drawn first, with the same generator)."""
    a, b = one_seed([p[0] for p in pairs]), one_seed([p[1] for p in pairs])
    copied = {f"seed{k}": a["seed0"] for k in range(copies)}
    i, j = paired_bootstrap(a, b, resamples=300), paired_bootstrap(copied, b, resamples=300)
    assert (j.low, j.difference, j.high) == pytest.approx((i.low, i.difference, i.high), abs=1e-12)
    assert (j.seeds_a, j.seeds_b) == (copies, 1)


def test_the_difference_averages_each_methods_seeds_with_equal_weight():
    a = {"seed0": tasks([1, 1]), "seed1": tasks([0, 1]), "seed2": tasks([0, 0])}
    b = {"seed0": tasks([0, 0])}
    assert paired_bootstrap(a, b).difference == pytest.approx(((1 + 0 + 0) / 3 + (1 + 1 + 0) / 3) / 2)


def test_the_reports_intervals_widen_when_seeds_disagree(tmp_path):
    """Two training seeds of SWEET-RL land on opposite sides of MT-DPO: +30 points at seed 0, −10 at seed 1, each
    resolved on its own over 300 tasks. Their mean (+10) rests on two trainings that disagree, so the report's
    interval must cover 0; a bootstrap over tasks alone (each task's mean over the seeds) excludes it."""
    rng = np.random.default_rng(3)
    base = rng.uniform(0.3, 0.6, 300)
    noise = {k: rng.normal(0, 0.05, 300) for k in range(2)}
    shift = {0: 0.3, 1: -0.1}

    def write(method: str, seed: int, rewards) -> None:
        (tmp_path / method).mkdir(exist_ok=True)
        frame = pl.DataFrame({"task_id": [f"t{k:03d}" for k in range(300)], "reward": rewards})
        frame.write_parquet(tmp_path / method / f"trajectories-seed{seed}.parquet")

    for seed in (0, 1):
        write("mtdpo", seed, base)
        write("sweet", seed, base + shift[seed] + noise[seed])
    (both,) = method_intervals(tmp_path, "reward", comparisons=(("sweet", "mtdpo"),))
    assert both.difference == pytest.approx(0.1, abs=0.01)
    assert both.low < 0 < both.high and (both.seeds_a, both.seeds_b) == (2, 2)
    for seed, sign in ((0, 1), (1, -1)):  # each seed alone resolves its own direction
        alone = tmp_path / f"seed{seed}"
        for method in ("sweet", "mtdpo"):
            (alone / method).mkdir(parents=True)
            name = f"trajectories-seed{seed}.parquet"
            (alone / method / name).write_bytes((tmp_path / method / name).read_bytes())
        (own,) = method_intervals(alone, "reward", comparisons=(("sweet", "mtdpo"),))
        assert own.excludes_zero and np.sign(own.difference) == sign
    pooled = {
        t: (base[k] + shift[0] + noise[0][k] + base[k] + shift[1] + noise[1][k]) / 2
        for k, t in enumerate(f"t{k:03d}" for k in range(300))
    }
    tasks_only = paired_bootstrap({"pooled": pooled}, {"pooled": dict(zip(pooled, base))})
    assert tasks_only.excludes_zero  # what the report said before it resampled seeds


def test_task_means_average_samples():
    frame = pl.DataFrame({"task_id": ["a", "a", "b", "a", "b", "b"], "success": [True, False, True, True, True, True]})
    assert task_means(frame, "success") == {"a": pytest.approx(2 / 3), "b": 1.0}


def test_method_intervals_read_every_seed_file_and_skip_methods_not_run(tmp_path):
    def write(method: str, seed: int, successes: list[bool]) -> None:
        (tmp_path / method).mkdir(exist_ok=True)
        frame = pl.DataFrame({"task_id": [f"t{k}" for k in range(len(successes))], "success": successes, "x": 1})
        frame.write_parquet(tmp_path / method / f"trajectories-seed{seed}.parquet")

    write("sweet", 0, [True, True, False, True])
    write("sweet", 1, [True, False, False, True])
    write("mtdpo", 0, [False, True, False, False])
    write("mtdpo", 1, [False, True, False, True])
    (i,) = method_intervals(tmp_path, "success")  # rft, sweet_no_info and zero_shot were not run
    assert (i.a, i.b, i.tasks) == ("sweet", "mtdpo", 4)
    assert i.difference == pytest.approx((0.5 + 0 + 0 + 0.5) / 4)


def test_wins_are_paired_against_each_tasks_reference_with_ties_as_half(tmp_path):
    reference = {"t0": 0.5, "t1": 0.5, "t2": 0.2}
    for method, seeds in {
        "sweet": [[0.6, 0.5, 0.1], [0.4, 0.5, 0.3]],
        "rft": [[0.5, 0.1, 0.9], [0.5, 0.1, 0.9]],
    }.items():
        (tmp_path / method).mkdir()
        for seed, rewards in enumerate(seeds):
            frame = pl.DataFrame({"task_id": list(reference), "reward": rewards})
            frame.write_parquet(tmp_path / method / f"trajectories-seed{seed}.parquet")
    (i,) = method_intervals(tmp_path, "reward", measure="win rate", reference=reference)
    # sweet: t0 one win and one loss (0.5), t1 two ties (0.5), t2 a loss and a win (0.5);
    # rft: t0 two ties (0.5), t1 two losses (0), t2 two wins (1).
    assert (i.a, i.b, i.measure) == ("sweet", "rft", "win rate")
    assert i.difference == pytest.approx(((0.5 - 0.5) + (0.5 - 0) + (0.5 - 1)) / 3)
    (s,) = method_intervals(tmp_path, "reward", measure="similarity")
    assert s.measure == "similarity" and s.difference == pytest.approx((0.5 - 0.5 + 0.5 - 0.1 + 0.2 - 0.9) / 3)
