"""Movement from the base policy and the failure breakdown rows, on hand-built evaluation files."""

from __future__ import annotations

import polars as pl

from sweetflow.dialogue import AGENT, HUMAN
from sweetflow.report.behaviour import behaviour_rows, moved_from_base


def write(directory, seed: int, said: list[list[str]]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    dialogues = [
        [t for m in messages for t in ({"role": AGENT, "content": m}, {"role": HUMAN, "content": "ok"})]
        for messages in said
    ]
    pl.DataFrame(
        {"task_id": [f"t{i}" for i in range(len(said))], "sample": [0] * len(said), "dialogue": dialogues}
    ).write_parquet(directory / f"trajectories-seed{seed}.parquet")


def test_movement_counts_dialogues_that_differ_from_the_base_with_the_same_seed(tmp_path):
    write(tmp_path / "zero_shot", 0, [["a", "b"], ["c"], ["d"], ["e"]])
    write(tmp_path / "zero_shot", 1, [["a"], ["c"], ["d"], ["e"]])
    write(tmp_path / "rft", 0, [["a", "b"], ["c", "x"], ["d"], ["y"]])  # 2 of 4 differ
    write(tmp_path / "rft", 1, [["a"], ["c"], ["d"], ["e"]])  # none differs
    assert moved_from_base(tmp_path, "rft") == 2 / 8
    assert moved_from_base(tmp_path, "zero_shot") == 0.0
    assert moved_from_base(tmp_path, "never_run") is None


def test_rows_cover_methods_with_seeds_only_and_keep_their_failure_shares(tmp_path):
    write(tmp_path / "zero_shot", 0, [["a"]])
    write(tmp_path / "sweet", 0, [["b"]])
    metrics = {
        "zero_shot": {"seeds": {"0": {}}, "failed_facts_missing": 0.5, "failed_miscopied": 0.2, "failed_other": 0.0},
        "sweet": {"seeds": {"0": {}}, "failed_facts_missing": 0.1, "failed_miscopied": 0.3, "failed_other": 0.0},
        "expert": {"failed_facts_missing": 0.0},
    }
    rows = behaviour_rows(tmp_path, metrics)
    assert [r["method"] for r in rows] == ["zero_shot", "sweet"]
    assert rows[0]["moved_from_base"] is None and rows[1]["moved_from_base"] == 1.0
    assert rows[1]["failed_miscopied"] == 0.3


def test_answers_without_a_page_are_counted_over_seeds_for_design_tasks_only(tmp_path):
    for seed, statuses in enumerate([["rendered", "no_html", "rendered"], ["render_failed", "rendered", "rendered"]]):
        (tmp_path / "rft").mkdir(exist_ok=True)
        pl.DataFrame({"score_status": statuses}).write_parquet(tmp_path / "rft" / f"trajectories-seed{seed}.parquet")
    (tmp_path / "sweet").mkdir()
    pl.DataFrame({"score_status": ["ok", "error"]}).write_parquet(tmp_path / "sweet" / "trajectories-seed0.parquet")
    metrics = {"rft": {"seeds": {}, "context_full": 3, "count": 6, "mean_turns": 4.5}, "sweet": {"seeds": {}}}
    rft, sweet = behaviour_rows(tmp_path, metrics)
    assert rft["no_page"] == 2 / 6 and rft["context_full"] == 0.5 and rft["mean_turns"] == 4.5
    assert sweet["no_page"] is None and sweet["context_full"] is None  # a backend method's statuses are the sandbox's
