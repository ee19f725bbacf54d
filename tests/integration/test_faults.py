"""Fault injection: hostile files and misbehaving model servers each give one line and lose nothing.

Files: every JSONL reader (tasks, offline trajectories, rows to score) meets lines nested too deep, numbers of
thousands of digits, lone surrogates, a link to /dev/zero, a named pipe and an empty file. Servers: the agent's
client meets, through a proxy in front of a real `transformers serve` (tests/support/fault_proxy.py: replies no
real server here can be made to send), an HTML page, a body that is not JSON, a choice without a message, a
reply trickled a byte at a time and one of 10 MB; and an evaluation stopped by SIGTERM, then run again, asks
the server for none of the episodes it had finished (counted at the proxy)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from sweetflow.cli import main
from sweetflow.core.params import EndpointParams
from tests.support.fault_proxy import FaultProxy
from tests.support.params import openai_agent
from tests.support.project import ROOT, make_project, run, tool_env
from tests.support.served_episodes import endpoint, roll

A_TASK = {
    "problem_description": "Write f(x) that doubles x.\ndef f(x):",
    "ground_truth": "def f(x):\n    return 2 * x",
    "test_cases": {"test1": "f(1)", "test2": "f(2)"},
}
A_LINE = {"task": A_TASK, "dialogue_history": [{"role": "assistant", "content": "hi"}], "answer": "x", "reward": 1}

# Lines that are valid JSON and hostile: each reader must name file, line (and field) in one line.
HOSTILE_LINES = {
    "nested too deep": ("[" * 100_000 + "]" * 100_000).encode(),
    "a number of 5,000 digits": json.dumps({**A_LINE, "reward": 0}).replace('"reward": 0', '"reward": ' + "9" * 5000),
    "a lone surrogate": json.dumps({**A_LINE, "answer": "\ud800"}),
}


def write_lines(path: Path, *lines: str | bytes) -> Path:
    path.write_bytes(b"".join((line if isinstance(line, bytes) else line.encode()) + b"\n" for line in lines))
    return path


def cli(args: list[str], capsys) -> tuple[int, str]:
    code = main(args)
    return code, capsys.readouterr().out


def earlier_import(out: Path) -> dict[str, bytes]:
    """An import already at `out`, as a team's earlier run left it: what a failed import must not touch."""
    out.mkdir()
    frame = pl.DataFrame({"task_id": ["t0"], "reward": [1.0]})
    frame.write_parquet(out / "trajectories.parquet")
    frame.write_parquet(out / "tasks.parquet")
    return {p.name: p.read_bytes() for p in out.iterdir()}


@pytest.mark.parametrize("kind", sorted(HOSTILE_LINES))
def test_a_hostile_line_is_one_line_naming_file_and_line_and_the_earlier_import_stays(kind, tmp_path, capsys):
    path = write_lines(tmp_path / "in.jsonl", json.dumps(A_LINE), HOSTILE_LINES[kind])
    out = tmp_path / "out"
    before = earlier_import(out)
    code, said = cli(["import-trajectories", str(path), "--out", str(out)], capsys)
    assert code == 2 and said.startswith(f"error: {path}: line 2: field ") and said.count("\n") == 1, said
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    code, said = cli(["score", str(path), "--domain", "backend"], capsys)
    assert code == 2 and said.startswith(f"error: {path}: line 2: field ") and said.count("\n") == 1, said


@pytest.mark.parametrize("make", ["dev_zero", "fifo"])
def test_a_device_or_a_pipe_is_refused_by_name_at_once(make, tmp_path):
    """Through the command line as a user runs it: a link to /dev/zero was read until the kernel killed the
    process, a named pipe hung it for ever."""
    path = tmp_path / "in.jsonl"
    if make == "dev_zero":
        path.symlink_to("/dev/zero")
    else:
        os.mkfifo(path)
    kind = {"dev_zero": "a character device", "fifo": "a named pipe"}[make]
    commands = (
        ["import-trajectories", str(path), "--out", str(tmp_path / "out")],
        ["score", str(path), "--domain", "backend"],
    )
    for args in commands:
        done = subprocess.run(
            [sys.executable, "-m", "sweetflow.cli", *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            env=tool_env(),
        )
        assert done.returncode == 2 and done.stdout == f"error: {path}: {kind}, not a file to read\n", done
    assert not (tmp_path / "out").exists()


def test_an_empty_or_blank_import_is_an_error_and_keeps_the_earlier_one(tmp_path, capsys):
    out = tmp_path / "out"
    before = earlier_import(out)
    for text in ("", "\n  \n\n"):
        path = tmp_path / "blank.jsonl"
        path.write_text(text)
        code, said = cli(["import-trajectories", str(path), "--out", str(out)], capsys)
        assert (code, said) == (2, f"error: {path}: no trajectory to import (the file is empty or blank)\n")
        assert {p.name: p.read_bytes() for p in out.iterdir()} == before


@pytest.mark.parametrize("make", ["dev_zero", "fifo"])
def test_the_rollout_stage_refuses_a_device_or_a_pipe_by_name_and_leaves_nothing_behind(make, tmp_path):
    """It said "no such file or directory" of both, and left an empty data/backend/.rollout.tmp-<pid>/."""
    project = make_project(
        tmp_path / "p",
        {
            "backend": {"tasks": {"n_train": 4, "n_val": 1, "n_test": 2}, "scoring": {"workers": 1}},
            "rollout": {"source": "import", "import_file": "data/offline/in.jsonl"},
        },
    )
    run([sys.executable, "-m", "stages.tasks", "backend"], project)
    path = project / "data/offline/in.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    if make == "dev_zero":
        path.symlink_to("/dev/zero")
    else:
        os.mkfifo(path)
    kind = {"dev_zero": "a character device", "fifo": "a named pipe"}[make]
    done = subprocess.run(
        [sys.executable, "-m", "stages.rollout", "backend"],
        cwd=project,
        env=tool_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and done.stderr.strip().endswith(f"data/offline/in.jsonl: {kind}, not a file to read")
    assert [p.name for p in (project / "data/backend").iterdir()] == ["tasks"]  # no .rollout.tmp-<pid>/


# --- a misbehaving server behind the agent ---------------------------------------------------------


def through(proxy: FaultProxy, model: str, **kw) -> EndpointParams:
    return endpoint(proxy.base_url, model, **kw)


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        ("html", "a malformed reply: not a chat completion"),
        ("not_json", "a malformed reply: not JSON"),
        ("no_message", "a malformed reply: its choice has no message"),
    ],
)
def test_a_malformed_reply_fails_its_episode_and_the_others_go_on(
    fault, reason, openai_server, checked_tasks, tmp_path
):
    base_url, model = openai_server
    with FaultProxy(base_url, drop=0, delay=0, error=0, reply_fault=fault, fault_every=3) as proxy:
        frame = roll(checked_tasks, through(proxy, model, max_retries=0, concurrency=1), tmp_path / "c.jsonl")
    assert frame.height == len(checked_tasks) and proxy.counts["reply_faults"] >= 1
    failed = frame.filter(pl.col("failure").is_not_null())
    assert failed.height >= 1 and failed["failure"].str.contains(reason, literal=True).all(), failed["failure"]
    assert frame.filter(pl.col("failure").is_null()).height >= 1  # the rest ran on


def test_a_trickled_reply_is_cut_off_at_its_deadline(openai_server, checked_tasks, tmp_path):
    base_url, model = openai_server
    start = time.monotonic()
    with FaultProxy(base_url, drop=0, delay=0, error=0, reply_fault="trickle") as proxy:
        frame = roll(checked_tasks[:2], through(proxy, model, timeout_s=1.0, max_retries=0), tmp_path / "c.jsonl")
    # The valid reply, a byte every 0.05 s, takes ~12 s; each request was cut at 1 s whatever its reads did.
    assert time.monotonic() - start < 10
    failures = frame["failure"]
    assert (
        failures.is_not_null().all() and failures.str.contains("longer than timeout_s (1 s) in all", literal=True).all()
    )


def test_a_huge_reply_is_refused_past_its_cap(openai_server, checked_tasks, tmp_path):
    base_url, model = openai_server
    with FaultProxy(base_url, drop=0, delay=0, error=0, reply_fault="huge") as proxy:
        frame = roll(checked_tasks[:2], through(proxy, model, max_retries=0), tmp_path / "c.jsonl")
    # max_new_tokens 12: a cap of 64 KiB + 12 KiB, against 10 MB sent
    failures = frame["failure"]
    assert (
        failures.is_not_null().all()
        and failures.str.contains("the reply passed 77,824 bytes, the cap", literal=True).all()
    )


@pytest.mark.parametrize(("fault", "reason"), [("trickle", "longer than timeout_s (1 s) in all"), ("huge", "the cap")])
def test_the_simulators_client_has_the_same_deadline_and_cap(fault, reason, openai_server, checked_tasks, tmp_path):
    """The agent asks the real server, the simulated human asks through the misbehaving proxy."""
    base_url, model = openai_server
    with FaultProxy(base_url, drop=0, delay=0, error=0, reply_fault=fault) as proxy:
        human = through(proxy, model, timeout_s=1.0, max_retries=0)
        frame = roll(checked_tasks[:2], endpoint(base_url, model, max_retries=0), tmp_path / "c.jsonl", human=human)
    asked = frame.filter((pl.col("n_turns") >= 1) & ~pl.col("answered"))  # the human was asked
    failures = asked["failure"]
    assert asked.height and failures.is_not_null().all(), frame["failure"]
    assert all(f.startswith("simulator: ") and reason in f for f in failures), failures


def test_an_evaluation_stopped_by_sigterm_asks_for_no_finished_episode_again(openai_server, tmp_path):
    """Every second request gets a final answer at once (the proxy's "answer"), the others the served model's
    reply, so that episodes end turn after turn. The stage is stopped by SIGTERM mid-evaluation, with every
    finished episode still unsaved (`flush_every` above their number); run again, it asks for none of them."""
    base_url, model = openai_server
    n_tasks = 12
    with FaultProxy(base_url, drop=0, delay=0, error=0, reply_fault="answer", fault_every=2) as proxy:
        served = openai_agent(through(proxy, model, concurrency=1).model_dump(), max_new_tokens=8)
        params = {
            "backend": {"tasks": {"n_train": 2, "n_test": n_tasks}, "scoring": {"workers": 1}},
            "episodes": {"max_turns": 10, "flush_every": 1000},
            "agents": {"served": served.model_dump(mode="json")},
            "evaluate": {"methods": ["served"]},
        }
        project = make_project(tmp_path / "p", params)
        run([sys.executable, "-m", "stages.tasks", "backend"], project)
        stage = [sys.executable, "-m", "stages.evaluate", "backend", "served"]
        proc = subprocess.Popen(stage, cwd=project, env=tool_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and len(proxy.bodies) < n_tasks + 4 and proc.poll() is None:
            time.sleep(0.05)  # into the second turn: the first turn's answered episodes are finished, unsaved
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=120)
        assert proc.returncode == 128 + signal.SIGTERM, stderr
        kept = [
            json.loads(line) for f in (project / ".sweetflow/checkpoints").glob("evaluate@*.jsonl") for line in f.open()
        ]
        finished = {r["task_id"] for r in kept if r["failure"] is None}
        assert finished, "the episodes finished before SIGTERM were kept"

        proxy.bodies.clear()
        proxy.fault_every = 1  # the same server (its URL is part of what a rerun resumes), answering at once now
        run(stage, project)
    asked = [body.decode() for body in proxy.bodies]
    assert len(asked) == n_tasks - len(finished)
    tasks = pl.read_parquet(project / "data/backend/tasks/test.parquet").select("task_id", "problem_description")
    for task_id, problem in tasks.iter_rows():  # each request, a dialogue's prompt, names its task
        named = [body for body in asked if json.dumps(problem)[1:-1] in body]
        assert len(named) == (task_id not in finished), task_id
