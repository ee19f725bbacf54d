"""The `openai` agent and simulator against a real OpenAI-compatible server on loopback
(`transformers serve` of a tiny local checkpoint), directly and through a faulty network."""

from __future__ import annotations

import sys

import polars as pl

from sweetflow.core.artifacts import read_manifest
from sweetflow.dialogue import AGENT, HUMAN
from tests.support.fault_proxy import FaultProxy
from tests.support.params import endpoint_params, openai_agent
from tests.support.project import make_project, run
from tests.support.refusing_server import RefusingServer
from tests.support.served_episodes import MAX_TURNS, endpoint, roll


def assert_well_formed(frame: pl.DataFrame, n: int) -> None:
    assert frame.height == n and frame.select("task_id", "sample").is_unique().all()
    assert frame["failure"].is_null().all()
    for dialogue, answered in zip(frame["dialogue"], frame["answered"]):
        roles = [t["role"] for t in dialogue]
        assert roles == [AGENT, HUMAN] * (len(roles) // 2) + [AGENT]
        assert len(roles) == 2 * MAX_TURNS - 1 or answered
        for turn in dialogue:
            if turn["role"] == AGENT:
                assert '"role": "system"' in turn["prompt"] and turn["raw"] is not None
            else:
                assert len(turn["content"]) <= 400


def test_served_policy_and_simulator_produce_well_formed_episodes(openai_server, checked_tasks, tmp_path):
    frame = roll(checked_tasks, endpoint(*openai_server, concurrency=2), tmp_path / "c.jsonl")
    assert_well_formed(frame, len(checked_tasks))


def test_faulty_network_loses_and_duplicates_nothing(openai_server, checked_tasks, tmp_path):
    base_url, model = openai_server
    with FaultProxy(base_url, drop=0.15, delay=0.1, delay_s=2.5, error=0.2, seed=1, retry_after=0.05) as proxy:
        ep = endpoint(proxy.base_url, model, timeout_s=2.0, max_retries=10, concurrency=2)
        frame = roll(checked_tasks, ep, tmp_path / "c.jsonl", samples=2)
    assert_well_formed(frame, 2 * len(checked_tasks))
    counts = proxy.counts
    assert counts["dropped"] + counts["errors"] + counts["delayed"] > 0, counts


def test_endpoint_that_stays_down_fails_episodes_with_a_reason(checked_tasks, tmp_path):
    ep = endpoint("http://127.0.0.1:9/v1", "none", timeout_s=0.5, max_retries=1)
    frame = roll(checked_tasks[:2], ep, tmp_path / "c.jsonl")
    assert frame["failure"].str.starts_with("agent: APIConnectionError").all()


def test_api_key_never_reaches_an_artifact(openai_server, tmp_path, monkeypatch):
    secret = "sk-sweetflow-test-SECRET-0123456789"
    base_url, model = openai_server
    endpoint = endpoint_params(base_url=base_url, model=model, api_key_env="SWEETFLOW_TEST_KEY").model_dump()
    served = openai_agent(endpoint, max_new_tokens=8).model_dump(mode="json")
    params = {
        "backend": {"tasks": {"n_train": 2, "n_test": 3}, "scoring": {"workers": 1}},
        "episodes": {"max_turns": 2},
        "agents": {"served": served},
        "evaluate": {"methods": ["served"]},
    }
    project = make_project(tmp_path / "p", params)
    run([sys.executable, "-m", "stages.tasks", "backend"], project)
    monkeypatch.setenv("SWEETFLOW_TEST_KEY", secret)
    run([sys.executable, "-m", "stages.evaluate", "backend", "served"], project)
    assert (project / "reports/backend/served/metrics.json").exists()
    # What answered is in the manifest: DVC sees only the URL.
    answered = read_manifest(project / "data/backend/evaluations/served")["endpoints"]
    assert answered == {base_url: {"models": [model], "system_fingerprints": answered[base_url]["system_fingerprints"]}}
    leaks = [
        p for p in project.rglob("*") if p.is_file() and ".git" not in p.parts and secret.encode() in p.read_bytes()
    ]
    assert leaks == []


def echo_authorization(headers) -> dict:
    """An error body quoting the request's Authorization header, as some misconfigured gateways send: the one
    way a key comes back inside an error text."""
    message = f"invalid credentials: Authorization: {headers.get('Authorization')}"
    return {"error": {"message": message, "type": "invalid_request_error"}}


def test_a_key_echoed_in_an_error_is_redacted_everywhere_it_would_be_stored(tmp_path, monkeypatch):
    secret = "sk-sweetflow-echo-SECRET-9876543210"
    with RefusingServer(echo_authorization) as server:
        endpoint = endpoint_params(
            base_url=server.base_url, model="m", api_key_env="SWEETFLOW_TEST_KEY", max_retries=0
        ).model_dump()
        served = openai_agent(endpoint, max_new_tokens=8).model_dump(mode="json")
        params = {
            "backend": {"tasks": {"n_train": 2, "n_test": 3}, "scoring": {"workers": 1}},
            "episodes": {"max_turns": 2, "max_failure_share": 0.0},
            "agents": {"served": served},
            "evaluate": {"methods": ["served"]},
        }
        project = make_project(tmp_path / "p", params)
        run([sys.executable, "-m", "stages.tasks", "backend"], project)
        monkeypatch.setenv("SWEETFLOW_TEST_KEY", secret)
        result = run([sys.executable, "-m", "stages.evaluate", "backend", "served"], project, check=False)
    assert result.returncode == 1 and "episodes failed" in result.stderr  # every request was refused
    assert "[redacted]" in result.stderr and secret not in result.stdout + result.stderr
    stored = [p for p in project.rglob("*") if p.is_file() and ".git" not in p.parts]
    checkpoints = [p for p in stored if p.suffix == ".jsonl"]
    assert checkpoints and all("[redacted]" in p.read_text() for p in checkpoints)  # the failures were kept
    assert [p for p in stored if secret.encode() in p.read_bytes()] == []
