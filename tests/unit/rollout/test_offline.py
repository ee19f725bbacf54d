"""Trajectories made elsewhere as the rollout (`rollout.source: import`): the mapping to training
tasks, skipped and bad lines, rewards rescored or trusted, and the round trip through the official shape."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sweetflow.backend.sandbox.pool import Sandbox
from sweetflow.backend.scoring import check_references
from sweetflow.backend.tasks.colbench import read_backend_jsonl, to_official_row
from sweetflow.backend.tasks.procedural import generate_tasks
from sweetflow.backend.tasks.table import CHECKED_SCHEMA
from sweetflow.backend.tasks.table import to_frame as tasks_frame
from sweetflow.colbench import export_official
from sweetflow.core.artifacts import content_hash, stage_output
from sweetflow.core.errors import InputError
from sweetflow.core.inputs import ImportRowError
from sweetflow.core.tables import TRAJECTORY_SCHEMA, TURN, to_frame
from sweetflow.dialogue import AGENT, HUMAN
from sweetflow.rollout.offline import import_rollout
from tests.support.offline import official_line as line
from tests.support.params import params_with, sandbox_params
from tests.support.project import SAMPLE

TASKS = read_backend_jsonl(SAMPLE / "backend_test_first100.jsonl", limit=8)
TRAIN, VAL, ELSEWHERE = TASKS[:4], TASKS[4:6], TASKS[6:]


def write(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in lines))
    return path


def params(max_tasks: int | None = None, reward: str = "file"):
    rollout = {
        "source": "import",
        "import_file": "data/offline/t.jsonl",
        "import_reward": reward,
        "max_tasks": max_tasks,
    }
    return params_with({"rollout": rollout, "backend": {"scoring": {"workers": 1}}})


def test_lines_land_on_their_training_tasks_in_the_files_order_and_the_rest_are_counted(tmp_path):
    lines = [line(TRAIN[1], reward=1.0), line(TRAIN[0]), line(VAL[0]), line(TRAIN[1], reward=0.5), line(TRAIN[3])]
    out = tmp_path / "trajectories.parquet"
    metrics = import_rollout(write(tmp_path / "t.jsonl", lines), TRAIN, VAL, "backend", params(max_tasks=3), out)
    frame = pl.read_parquet(out)
    assert frame.schema == TRAJECTORY_SCHEMA
    ids = [t["task_id"] for t in TRAIN]
    assert frame.select("task_id", "sample", "reward").rows() == [(ids[1], 0, 1.0), (ids[0], 0, 0.0), (ids[1], 1, 0.5)]
    assert frame["success"].to_list() == [True, False, False]
    assert frame["answered"].all() and frame["ended_by"].to_list() == ["answer"] * 3
    # The run's turn limit, recorded for what rebuilds the prompts (the official lines hold none of ours)
    assert frame["max_turns"].to_list() == [params(max_tasks=3).episodes.max_turns] * 3
    first = frame["dialogue"][0].to_list()
    assert [(t["role"], t["prompt"], t["raw"]) for t in first] == [
        (AGENT, "<prompt 1>", "What ...?"),
        (HUMAN, None, None),
        (AGENT, "<prompt 2>", "def f(): pass"),
    ]
    assert metrics["lines"] == 5 and metrics["count"] == 3 and metrics["tasks"] == 2
    assert (metrics["skipped_validation"], metrics["skipped_beyond_max_tasks"]) == (1, 1)
    assert metrics["reward_source"] == "file" and metrics["tests_passed"] == pytest.approx(0.5)


BAD_LINES = [
    (lambda row: row.pop("task"), "task"),
    (lambda row: row["task"].pop("ground_truth"), "ground_truth"),
    (lambda row: row.pop("dialogue_history"), "dialogue_history"),
    (lambda row: row.update(dialogue_history=[]), "dialogue_history"),
    (lambda row: row["dialogue_history"].__setitem__(1, "hi"), "dialogue_history[1]"),
    (lambda row: row["dialogue_history"][1].update(role="robot"), "dialogue_history[1].role"),
    (lambda row: row["dialogue_history"].pop(0), "dialogue_history[0].role"),  # starts with the human
    (lambda row: row["dialogue_history"].pop(1), "dialogue_history[1].role"),  # the agent twice in a row
    (lambda row: row["dialogue_history"][0].update(input=["a"]), "dialogue_history[0].input"),
    (lambda row: row.pop("answer"), "answer"),
    (lambda row: row.update(reward=float("nan")), "reward"),
    (lambda row: row.update(reward=None), "reward"),  # import_reward 'file' has no reward to trust
    (lambda row: row.update(task=to_official_row(ELSEWHERE[0])), "task"),  # on no training or validation task
]


@pytest.mark.parametrize("spoil, field", BAD_LINES)
def test_a_bad_line_names_file_line_and_field_and_leaves_the_last_output_as_it_was(tmp_path, monkeypatch, spoil, field):
    monkeypatch.chdir(tmp_path)  # the stage's run record goes to reports/runs/
    out = tmp_path / "rollout"
    with stage_output(out, "rollout@backend", {}) as first:
        import_rollout(
            write(tmp_path / "good.jsonl", [line(TRAIN[0])]),
            TRAIN,
            VAL,
            "backend",
            params(),
            first.dir / "trajectories.parquet",
        )
    before = content_hash(out)
    bad = line(TRAIN[1])
    spoil(bad)
    path = write(tmp_path / "t.jsonl", [line(TRAIN[0]), line(TRAIN[2]), bad])
    error = pytest.raises(ImportRowError, match=re.escape(f"{path}: line 3: field {field!r}"))
    with error, stage_output(out, "rollout@backend", {}) as second:
        import_rollout(path, TRAIN, VAL, "backend", params(), second.dir / "trajectories.parquet")
    assert content_hash(out) == before


def test_a_file_with_no_line_on_the_kept_training_tasks_is_an_error(tmp_path):
    path = write(tmp_path / "t.jsonl", [line(VAL[0]), line(TRAIN[2])])
    expected = r"none of its 2 lines lies on one of the first 1 training tasks \(1 on validation"
    with pytest.raises(InputError, match=expected):
        import_rollout(path, TRAIN, VAL, "backend", params(max_tasks=1), tmp_path / "out.parquet")


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(InputError, match=r"rollout.import_file: .*missing.jsonl: cannot be read \(No such file"):
        import_rollout(tmp_path / "missing.jsonl", TRAIN, VAL, "backend", params(), tmp_path / "out.parquet")


def test_the_sandbox_scores_every_answer_again_and_the_metrics_compare_the_files_rewards(tmp_path):
    with Sandbox(sandbox_params(workers=1)) as sandbox:
        checked = [{**t, "expected": c.expected} for t, c in zip(TRAIN, check_references(TRAIN, sandbox))]
    right = TRAIN[0]["ground_truth"]
    # The file's rewards: right, right, and wrong (the reference is given 0).
    lines = [line(TRAIN[0], right, 1.0), line(TRAIN[1], reward=0.0), line(TRAIN[0], right, 0.0)]
    out = tmp_path / "trajectories.parquet"
    metrics = import_rollout(write(tmp_path / "t.jsonl", lines), checked, VAL, "backend", params(reward="sandbox"), out)
    frame = pl.read_parquet(out)
    assert frame["reward"].to_list() == [1.0, 0.0, 1.0] and frame["success"].to_list() == [True, False, True]
    assert frame["score_status"].null_count() == 0 and len(frame["test_outputs"][0]) == len(TRAIN[0]["test_cases"])
    assert metrics["reward_source"] == "sandbox" and metrics["success_rate"] == pytest.approx(2 / 3)
    assert metrics["file_reward_agreement"] == pytest.approx(2 / 3)
    assert metrics["file_reward_mean"] == pytest.approx(1 / 3)


# Exported trajectories of any task source come back to their own tasks (matched by content).
PROCEDURAL, _ = generate_tasks(6, 1, seed=5)
text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)


@st.composite
def trajectories(draw) -> pl.DataFrame:
    rows, samples = [], {}
    for _ in range(draw(st.integers(1, 8))):
        task_id = draw(st.sampled_from(PROCEDURAL))["task_id"]
        turns = []
        for i in range(2 * draw(st.integers(0, 3)) + 1):
            turn = dict.fromkeys(TURN.to_schema(), None) | {"role": HUMAN if i % 2 else AGENT, "content": draw(text)}
            if turn["role"] == AGENT:
                turn.update(prompt=draw(text), raw=draw(text))
            turns.append(turn)
        samples[task_id] = samples.get(task_id, -1) + 1
        reward = draw(st.floats(0, 1))
        rows.append(
            {
                "task_id": task_id,
                "sample": samples[task_id],
                "seed": None,
                "dialogue": turns,
                "answer": draw(text),
                "answered": False,
                "ended_by": None,
                "n_turns": len(turns) // 2 + 1,
                "reward": reward,
                "success": reward == 1.0,
                "score_status": None,
                "failure": None,
                "test_outputs": None,
            }
        )
    return to_frame(rows)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(trajectories())
def test_exported_trajectories_import_as_they_were(tmp_path, ours):
    tasks = tasks_frame([{**t, "split": "train"} for t in PROCEDURAL], CHECKED_SCHEMA)
    export_official(ours, tasks, tmp_path / "t.jsonl")
    back = tmp_path / "back.parquet"
    import_rollout(tmp_path / "t.jsonl", PROCEDURAL, [], "backend", params(), back)
    columns = ["task_id", "sample", "dialogue", "answer", "n_turns", "reward", "success"]
    assert pl.read_parquet(back).select(columns).to_dicts() == ours.select(columns).to_dicts()
