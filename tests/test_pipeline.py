"""The DAG end to end with the real engines: DVC and Snakemake, lineage, sharing through a remote."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import polars as pl

from sweetflow.artifacts import content_hash, read_manifest
from sweetflow.dag import load_stages, rule_name
from tests.conftest import ROOT, SMALL_PARAMS, make_project, run

DATA_OUTS = (
    "data/tasks",
    "data/evaluations/reference",
    "data/demos",
    "data/rollout",
    "data/trajectory_pairs",
    "data/evaluations/expert",
    "data/evaluations/no_ask",
    "data/evaluations/zero_shot",
    "data/candidates",
    "data/ranked/with_info",
    "data/step_pairs/with_info",
    "data/critic_check/with_info",
    "data/evaluations/sweet",
)
# Checkpoints' weights and tokenizers (their training_config.json hold wall times).
CHECKPOINT_FILES = (
    "models/base/model.safetensors",
    "models/base/tokenizer.json",
    "models/critics/with_info/model.safetensors",
    "models/critics/no_info/model.safetensors",
    "models/policies/rft/seed1/model.safetensors",
    "models/policies/mtdpo/seed0/model.safetensors",
    "models/policies/sweet/seed1/model.safetensors",
)
METRICS = (
    "reports/tasks/metrics.json",
    "reports/backend/reference/metrics.json",
    "reports/demos/metrics.json",
    "reports/rollout/metrics.json",
    "reports/trajectory_pairs/metrics.json",
    "reports/backend/expert/metrics.json",
    "reports/backend/no_ask/metrics.json",
    "reports/backend/zero_shot/metrics.json",
    "reports/candidates/metrics.json",
    "reports/ranked/with_info/metrics.json",
    "reports/step_pairs/with_info/metrics.json",
    "reports/critic_check/with_info/metrics.json",
    "reports/backend/rft/metrics.json",
    "reports/backend/mtdpo/metrics.json",
    "reports/backend/sweet/metrics.json",
    "reports/backend/sweet_no_info/metrics.json",
)


def test_both_engines_name_the_same_stages():
    dvc = run(["dvc", "stage", "list", "--name-only"], ROOT).stdout.split()
    snake = run(["snakemake", "--list-rules"], ROOT).stdout.split()
    assert sorted(rule_name(s) for s in dvc) == sorted(r for r in snake if r != "all")
    assert {s.name for s in load_stages(ROOT)} == set(dvc)


def test_snakemake_lint_is_clean():
    result = run(["snakemake", "--lint"], ROOT, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_dvc_repro_generates_tasks_and_references_pass(repro_project: Path):
    metrics = json.loads((repro_project / "reports/backend/reference/metrics.json").read_text())
    assert metrics["count"] == SMALL_PARAMS["tasks"]["n_test"]
    assert metrics["tests_passed"] == 1.0 and metrics["success_rate"] == 1.0
    test = pl.read_parquet(repro_project / "data/tasks/test.parquet")
    assert test["flags"].list.len().sum() == 0
    assert (test["reference_passes"] == 10).all()
    for out in DATA_OUTS:
        manifest = read_manifest(repro_project / out)
        assert manifest["output_hash"] == content_hash(repro_project / out)
        assert manifest["code"]["git_commit"] and manifest["packages"]["polars"]
    shown = run(["dvc", "metrics", "show", "--json"], repro_project).stdout
    assert all(path in shown for path in METRICS)


def test_sweet_rl_chain_trains_every_method_per_seed_and_writes_the_table(repro_project: Path):
    seeds = SMALL_PARAMS["seeds"]
    critic = json.loads((repro_project / "reports/critics/with_info/metrics.json").read_text())
    assert critic["train_pairs"] > 0 and critic["training_info"] is True
    assert json.loads((repro_project / "reports/critics/no_info/metrics.json").read_text())["training_info"] is False
    pairs = pl.read_parquet(repro_project / "data/step_pairs/with_info/pairs.parquet")
    assert pairs.height > 0 and (pairs["chosen_score"] > pairs["rejected_score"]).all()
    for method in ("rft", "mtdpo", "sweet", "sweet_no_info"):
        assert sorted(p.name for p in (repro_project / f"models/policies/{method}").glob("seed*")) == [f"seed{k}" for k in seeds]
        metrics = json.loads((repro_project / f"reports/backend/{method}/metrics.json").read_text())
        assert sorted(metrics["seeds"]) == [str(k) for k in seeds]
        assert metrics["success_rate"] == sum(m["success_rate"] for m in metrics["seeds"].values()) / len(seeds)
        assert 0 <= metrics["tests_passed"] <= 1 and metrics["tests_passed_std"] >= 0
    results = (repro_project / "reports/results.md").read_text()
    assert "| SWEET-RL | `sweet` |" in results and "Goal check" in results
    assert (repro_project / "reports/summary/methods.png").read_bytes().startswith(b"\x89PNG")
    plots = run(["dvc", "plots", "show", "--json"], repro_project).stdout
    assert "reports/policies/sweet/plots" in plots and "reports/critics/with_info/plots" in plots
    lineage = run(["sweetflow", "lineage", "reports/backend/sweet/metrics.json"], repro_project).stdout
    for ancestor in ("policy@sweet", "step_pairs@with_info", "rank@with_info", "critic@with_info", "candidates", "tasks"):
        assert ancestor in lineage, ancestor


def test_dvc_and_snakemake_produce_identical_artifacts(repro_project: Path, tmp_path: Path):
    snake_project = make_project(tmp_path / "snake", SMALL_PARAMS)
    run(["snakemake", "--profile", "workflow/profiles/default", "--cores", "2"], snake_project)
    for out in DATA_OUTS + METRICS + CHECKPOINT_FILES:
        assert content_hash(snake_project / out) == content_hash(repro_project / out), out


def test_lineage_walks_to_the_roots_and_verifies(repro_project: Path):
    result = run(["sweetflow", "lineage", "reports/backend/reference/metrics.json"], repro_project)
    assert "score_references" in result.stdout and "data/tasks" in result.stdout
    assert "every recorded hash matches" in result.stdout


def test_lineage_names_a_hand_edited_artifact(repro_project: Path, tmp_path: Path):
    project = tmp_path / "edited"
    shutil.copytree(repro_project, project, symlinks=True)
    tasks = project / "data/tasks/test.parquet"
    df = pl.read_parquet(tasks)
    tasks.unlink()  # DVC may have linked it to its cache; write a new file, don't edit the cache
    df.with_columns(pl.lit("edited").alias("problem_description")).write_parquet(tasks)
    result = run(["sweetflow", "lineage", "reports/backend/reference/metrics.json"], project, check=False)
    assert result.returncode == 1
    text = re.sub(r"\s+", " ", result.stdout)
    assert "data/tasks: content differs" in text
    assert "input data/tasks/test.parquet changed" in text
    assert "dvc.lock: stage 'tasks' is not up to date" in text


def test_lineage_names_params_changed_since_the_run(repro_project: Path, tmp_path: Path):
    project = tmp_path / "stale"
    shutil.copytree(repro_project, project, symlinks=True)
    params = project / "params.yaml"
    params.write_text(params.read_text().replace("seed: 3", "seed: 4"))
    result = run(["sweetflow", "lineage", "data/tasks", "--no-dvc"], project, check=False)
    assert result.returncode == 1
    assert "section 'tasks' changed" in re.sub(r"\s+", " ", result.stdout)


def test_team_shares_artifacts_through_a_remote(repro_project: Path, tmp_path: Path):
    origin = tmp_path / "origin"
    shutil.copytree(repro_project, origin, symlinks=True)
    remote = tmp_path / "remote"
    run(["dvc", "remote", "add", "-d", "shared", str(remote)], origin)
    run(["git", "commit", "-qam", "add remote"], origin)
    run(["dvc", "push", "-q"], origin)

    clone = tmp_path / "clone"
    run(["git", "clone", "-q", str(origin), str(clone)], tmp_path)
    run(["dvc", "pull", "-q"], clone)
    for out in DATA_OUTS + METRICS + CHECKPOINT_FILES:
        assert content_hash(clone / out) == content_hash(origin / out)
    assert json.loads(run(["dvc", "status", "--json"], clone).stdout) == {}
    assert "up to date" in run(["dvc", "repro"], clone).stdout.lower()
