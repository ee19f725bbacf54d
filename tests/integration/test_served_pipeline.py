"""`backend: served` through real `dvc repro`: each seed's checkpoint evaluated by a `transformers
serve` of its own, candidates sampled from a server of the base model, what each served recorded in
the manifests, and no server left running. Backend domain only, to keep it to minutes, on a base
checkpoint with Llama-3.1-8B-Instruct's real chat template."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import psutil
import pytest
import yaml

from sweetflow.core.artifacts import content_hash, read_manifest
from tests.support.chat_templates import stock_checkpoint
from tests.support.params import project_params
from tests.support.project import SMALL_PARAMS, dvc_status, make_project, merge, run

TARGETS = ["evaluate_policy@backend-rft", "candidates@backend"]
SEEDS = SMALL_PARAMS["seeds"]
N_TEST = 6


def served_policy() -> dict:
    """params.yaml's `transformers serve` agent, generating short turns."""
    served = project_params().agents["served_base"].model_dump(mode="json")
    return {**served, "max_new_tokens": 16, "concurrency": 2}


def edit_params(project: Path, edit) -> None:
    """Apply `edit` to the project's params.yaml (a section of another backend has other keys, which
    a merge would keep: sections are replaced whole)."""
    params = yaml.safe_load((project / "params.yaml").read_text())
    edit(params)
    (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))


def left_running(project: Path) -> list[str]:
    """Processes still working in the project's directory (a server the stages started would be one)."""
    found = []
    for proc in psutil.process_iter(["cwd", "cmdline"]):
        if proc.info["cwd"] == str(project):
            found.append(" ".join(proc.info["cmdline"] or []))
    return found


def small_served(params: dict) -> None:
    """SMALL_PARAMS' backend, served evaluation and candidates, and only what `policy@backend-rft`
    needs (it depends on the step pairs of every critic): one critic, one policy. The RFT policy
    learns from every rollout, so that its seeds (data orders) give two different checkpoints."""
    params["evaluate"]["policy"] = params["candidates"]["policy"] = served_policy()
    params["critics"] = {"with_info": params["critics"]["with_info"]}
    params["policies"] = {"rft": {**params["policies"]["rft"], "min_reward": {"backend": 0.0, "frontend": 0.0}}}
    params["backend"]["tasks"]["n_test"] = N_TEST
    params["agents"]["served_base"]["max_new_tokens"] = 16


@pytest.fixture(scope="module")
def served_project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("served")
    # A checkpoint with Llama 3.1's chat template (no generation blocks): the server renders
    # its prompts with that template, and the policy's training finds the agent's turns without blocks.
    params = merge(
        SMALL_PARAMS,
        {"train_domains": ["backend"], "backend": {"model": {"base": "models/external/llama-3.1", "epochs": 0}}},
    )
    project = make_project(root / "project", params)
    stock_checkpoint(project / "models/external/llama-3.1", "llama-3.1-8b-instruct")
    edit_params(project, small_served)
    run(["git", "commit", "-qam", "served evaluation and candidates"], project)
    run(["dvc", "repro", "--quiet", *TARGETS], project, timeout=900)
    return project


def test_each_seed_is_evaluated_by_a_server_of_its_own_checkpoint(served_project: Path):
    project = served_project
    manifest = read_manifest(project / "data/backend/evaluations/rft")
    served = manifest["served"]
    assert sorted(served) == [f"seed{k}" for k in SEEDS]
    for seed in SEEDS:
        checkpoint = f"models/backend/policies/rft/seed{seed}"
        record = served[f"seed{seed}"]
        assert record["checkpoint"] == record["model"] == checkpoint
        assert record["command"] == [
            "transformers",
            "serve",
            checkpoint,
            "--host",
            "127.0.0.1",
            "--port",
            "{port}",
            "--device",
            "cpu",
        ]
        assert record["checkpoint_hash"] == manifest["inputs"][checkpoint] == content_hash(project / checkpoint)
    assert served["seed0"]["checkpoint_hash"] != served["seed1"]["checkpoint_hash"]  # two different models served

    # Every request was answered, and `transformers serve` answers only requests for the checkpoint it
    # was started with: each seed's episodes came from its own checkpoint's server.
    metrics = json.loads((project / "reports/backend/rft/metrics.json").read_text())
    assert sorted(metrics["seeds"]) == [str(k) for k in SEEDS]
    for seed in SEEDS:
        frame = pl.read_parquet(project / f"data/backend/evaluations/rft/trajectories-seed{seed}.parquet")
        assert frame.height == N_TEST and frame["failure"].is_null().all()
        turns = frame.explode("dialogue")["dialogue"].struct.unnest().filter(pl.col("role") == "agent")
        assert turns.height >= N_TEST
        assert turns["prompt"].str.starts_with("[").all()  # the chat sent to the server, as JSON
        # The server returns no log-probs, and none are made up; it counts the tokens it generated.
        assert turns["logprob_sum"].is_null().all() and turns["n_tokens"].is_between(1, 16).all()
    assert left_running(project) == []


def test_candidates_come_from_a_server_of_the_base_model(served_project: Path):
    project = served_project
    manifest = read_manifest(project / "data/backend/candidates")
    record = manifest["served"]["candidates.policy"]
    assert record["checkpoint"] == record["model"] == "models/backend/base"
    assert record["checkpoint_hash"] == content_hash(project / "models/backend/base")
    candidates = pl.read_parquet(project / "data/backend/candidates/candidates.parquet")
    states = pl.read_parquet(project / "data/backend/candidates/states.parquet")
    metrics = json.loads((project / "reports/backend/stages/candidates/metrics.json").read_text())
    assert (
        metrics["failed_generations"] == 0 and candidates.height == states.height * SMALL_PARAMS["candidates"]["n"] > 0
    )
    assert candidates["logprob_mean"].is_null().all() and candidates["n_tokens"].is_between(1, 16).all()
    assert dvc_status(project, *TARGETS) == {}
    assert left_running(project) == []


def test_an_agent_of_agents_is_served_from_the_base_model_by_the_evaluate_stage(served_project: Path):
    """`evaluate@` (and `rollout@`, the same code): the agent's params key names what was served."""
    project = served_project
    # Params keep model agents out of evaluate.methods, so no evaluate stage depends on a checkpoint; a
    # run by hand that serves the base model declares it first, as `stage.upstream` asks of every read.
    dvc_yaml = project / "dvc.yaml"
    original = dvc_yaml.read_text()
    entries = yaml.safe_load(original)
    entries["stages"]["evaluate"]["deps"].append("models/${item.domain}/base")
    dvc_yaml.write_text(yaml.safe_dump(entries, sort_keys=False))
    try:
        run(["python", "-m", "stages.evaluate", "backend", "served_base"], project)
    finally:
        dvc_yaml.write_text(original)
    manifest = read_manifest(project / "data/backend/evaluations/served_base")
    record = manifest["served"]["agents.served_base"]
    assert record["checkpoint"] == record["model"] == "models/backend/base"
    assert record["checkpoint_hash"] == manifest["inputs"]["models/backend/base"]
    assert "endpoints" not in manifest  # its own server is recorded by the checkpoint it served, not by its port
    frame = pl.read_parquet(project / "data/backend/evaluations/served_base/trajectories.parquet")
    assert frame.height == N_TEST and frame["failure"].is_null().all()
    assert left_running(project) == []


def test_what_cannot_be_served_honestly_is_refused_naming_the_key(served_project: Path):
    """A single endpoint for per-seed checkpoints, and the sampling baseline without log-probs."""
    project = served_project
    endpoint = {
        "base_url": "http://127.0.0.1:9/v1",
        "model": "m",
        "api_key_env": "OPENAI_API_KEY",
        "timeout_s": 5,
        "max_retries": 0,
        "concurrency": 1,
    }
    openai = {"backend": "openai", "endpoint": endpoint, "temperature": 1.0, "top_p": 1.0, "max_new_tokens": 16}

    def refused(params: dict) -> None:
        params["evaluate"]["policy"] = openai
        params["rank"]["baseline"] = "sampling"

    edit_params(project, refused)
    result = run(["python", "-m", "stages.evaluate_policy", "backend", "rft"], project, check=False)
    assert result.returncode == 2
    assert "evaluate.policy.backend: 'openai'" in result.stderr and "use 'served'" in result.stderr
    result = run(["python", "-m", "stages.rank", "backend", "with_info"], project, check=False)
    assert result.returncode == 2 and "rank.baseline: 'sampling'" in result.stderr
