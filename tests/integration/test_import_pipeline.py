"""The trained chain on trajectories made elsewhere: `rollout.source: import` on real ColBench rows,
through pairs, the critic, candidates and the policies, under `dvc repro`, on a base checkpoint whose
chat template (Mistral-7B-Instruct-v0.3's, real) has no generation blocks."""

from __future__ import annotations

import json

import polars as pl

from sweetflow.backend.tasks.colbench import read_backend_jsonl
from sweetflow.core.artifacts import read_manifest
from sweetflow.dag import load_stages, snakemake_inputs
from tests.support.chat_templates import check_the_trained_chain_kept_the_template, stock_checkpoint
from tests.support.offline import official_line
from tests.support.project import SAMPLE, SMALL_PARAMS, dvc_status, make_project, merge, run

ROWS = (SAMPLE / "backend_test_first100.jsonl").read_text().splitlines()
TRAIN_ROWS, N_VAL, TEST_ROWS = ROWS[:14], 4, ROWS[20:28]  # the last N_VAL train rows are the validation tasks
OFFLINE = "data/offline/offline.jsonl"
PARAMS = {
    **SMALL_PARAMS,
    "train_domains": ["backend"],
    "backend": {
        **SMALL_PARAMS["backend"],
        "tasks": {
            "source": "colbench",
            "colbench_train": "data/sources/train.jsonl",
            "colbench_test": "data/sources/test.jsonl",
            "colbench_test_rows": len(TEST_ROWS),
            "n_val": N_VAL,
            "seed": 0,
        },
    },
    "rollout": {"source": "import", "import_file": OFFLINE, "import_reward": "sandbox", "max_tasks": None},
    "seeds": [0],
}
TARGETS = [
    "policy@backend-sweet",
    "policy@backend-rft",
    "policy@backend-mtdpo",
    "critic_check@backend-with_info",
    "critic_quality@backend-with_info",
]


def test_the_chain_trains_on_imported_trajectories_and_the_file_is_a_dependency(tmp_path, monkeypatch):
    # The base model has Mistral v0.3's chat template (no generation blocks; the system prompt moved into the
    # last user turn, so adoption folds it into the first): the critics and policies find the agent's turns.
    base = "models/external/mistral-v0.3"
    project = make_project(tmp_path / "project", merge(PARAMS, {"backend": {"model": {"base": base, "epochs": 0}}}))
    stock_checkpoint(project / base, "mistral-7b-instruct-v0.3")
    (project / "data/sources/train.jsonl").write_text("\n".join(TRAIN_ROWS) + "\n")
    (project / "data/sources/test.jsonl").write_text("\n".join(TEST_ROWS) + "\n")
    # Two samples of every task of the train file, validation tasks included: the reference itself
    # (the file says 1.0) and a wrong answer (the file says 1.0 too: the sandbox scores it again).
    tasks = read_backend_jsonl(project / "data/sources/train.jsonl")
    wrong = "def f(*args, **kwargs):\n    return None"
    lines = [official_line(t, t["ground_truth"], 1.0) for t in tasks] + [official_line(t, wrong, 1.0) for t in tasks]
    (project / OFFLINE).write_text("".join(json.dumps(line) + "\n" for line in lines))

    run(["dvc", "repro", *TARGETS], project, timeout=900)

    metrics = json.loads((project / "reports/backend/stages/rollout/metrics.json").read_text())
    n_train = len(TRAIN_ROWS) - N_VAL
    assert (metrics["count"], metrics["tasks"], metrics["skipped_validation"]) == (2 * n_train, n_train, 2 * N_VAL)
    assert metrics["reward_source"] == "sandbox" and metrics["file_reward_agreement"] <= 0.5
    rollout = pl.read_parquet(project / "data/backend/rollout/trajectories.parquet")
    train_ids = set(pl.read_parquet(project / "data/backend/tasks/train.parquet")["task_id"])
    assert set(rollout["task_id"]) == train_ids and rollout["score_status"].null_count() == 0
    references = rollout.filter(pl.col("sample") == 0)
    assert references["success"].sum() >= n_train - 2  # a reference or two of the sample fail their own tests
    assert not rollout.filter(pl.col("sample") == 1)["success"].any()
    manifest = read_manifest(project / "data/backend/rollout")
    assert OFFLINE in manifest["inputs"]

    pairs = pl.read_parquet(project / "data/backend/trajectory_pairs/pairs.parquet")
    assert pairs.height >= n_train - 2 and set(pairs["task_id"]) <= train_ids
    for out in (
        "models/backend/critics/with_info",
        "models/backend/policies/sweet/seed0",
        "models/backend/policies/rft/seed0",
        "models/backend/policies/mtdpo/seed0",
    ):
        assert (project / out / "model.safetensors").is_file(), out
    # Mistral v0.3's template drops the system message from training sequences: adoption folds it into
    # the first user turn, and the critic still reads the reference (test_stock_templates.py's check).
    check_the_trained_chain_kept_the_template(project, {"system": "first user turn"}, PARAMS["episodes"]["max_turns"])
    candidates = pl.read_parquet(project / "data/backend/candidates/candidates.parquet")
    assert set(candidates["task_id"]) <= train_ids and candidates.height > 0
    quality = json.loads((project / "reports/backend/stages/critic_quality/with_info/metrics.json").read_text())
    assert quality["labelled"]
    assert dvc_status(project, *TARGETS) == {}

    # The file is the stage's dependency under both engines: a changed line reruns the rollout.
    monkeypatch.chdir(project)  # the Snakefile lists a source directory's files as it runs, in the project
    rollout_stage = next(s for s in load_stages(project) if s.name == "rollout@backend")
    assert OFFLINE in snakemake_inputs(rollout_stage, {o for s in load_stages(project) for o in s.outs})
    (project / OFFLINE).write_text("".join(json.dumps(line) + "\n" for line in lines[:-1]))
    status = dvc_status(project, "rollout@backend")
    assert {"changed deps": {"data/offline": "modified"}} in status["rollout@backend"]
