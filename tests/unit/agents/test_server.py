"""A checkpoint served on loopback (`sweetflow.agents.server`) and the `served` agent: the command's
templating, the record a stage keeps, and the error paths (a server that dies, one that never gets
ready, one that serves another model), each leaving no process behind, even when its stage is killed."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import psutil
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from sweetflow.agents.model import open_model_agent, served_records
from sweetflow.agents.server import ServerError, fill, serve, served_record
from sweetflow.core.errors import InputError
from sweetflow.core.params import ParamsError, ServedAgentParams, ServerParams
from sweetflow.dialogue import AgentTurn, EpisodeView, Message
from sweetflow.params import load_params
from tests.support.llm_server import cpu_server
from tests.support.params import project_params
from tests.support.project import ROOT, merge

PY = sys.executable


def with_marker(script: str) -> tuple[list[str], str]:
    """A server command running `script` in Python, carrying a unique marker on its command line so
    that a test can find its processes, and the marker."""
    marker = f"sweetflow-test-{uuid.uuid4().hex}"
    return [PY, "-c", textwrap.dedent(script), marker, "{checkpoint}", "{port}"], marker


def processes(marker: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        if marker in (proc.info["cmdline"] or []) and proc.status() != psutil.STATUS_ZOMBIE:
            found.append(proc)
    return found


def gone(marker: str, within_s: float = 10.0) -> bool:
    deadline = time.monotonic() + within_s
    while processes(marker):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


@pytest.fixture
def checkpoint_dir(tmp_path) -> Path:
    """What `serve` checks of a checkpoint before it starts anything: a directory with config.json."""
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "config.json").write_text("{}")
    return tmp_path / "ckpt"


def server(command: list[str], startup_timeout_s: float = 30.0) -> ServerParams:
    return ServerParams(command=command, model="{checkpoint}", startup_timeout_s=startup_timeout_s, threads=1)


# ----- templating and the record -----


@given(st.text(min_size=1, max_size=30).filter(lambda s: "{port}" not in s and "{checkpoint}" not in s))
def test_placeholders_are_filled_and_other_braces_kept(text):
    """Plain replacement: an argument with other braces (a JSON option) passes through untouched."""
    assert fill(f"{text}{{checkpoint}}:{{port}}{{}}", "models/x", 8123) == f"{text}models/x:8123{{}}"
    assert fill('{"temperature": 0}', "models/x", 1) == '{"temperature": 0}'


def test_the_record_names_the_checkpoint_and_the_model_and_leaves_the_port_out():
    params = project_params().agents["served_base"]
    record = served_record(params.server, Path("models/backend/policies/sweet/seed1"))
    assert record == {
        "checkpoint": "models/backend/policies/sweet/seed1",
        "model": "models/backend/policies/sweet/seed1",
        "command": [
            "transformers",
            "serve",
            "models/backend/policies/sweet/seed1",
            "--host",
            "127.0.0.1",
            "--port",
            "{port}",
            "--device",
            "cpu",
        ],
    }
    agents = {
        "seed1": params.model_copy(update={"checkpoint": "models/backend/policies/sweet/seed1"}),
        "agents.base": project_params().agents["base"],
    }
    records = served_records(agents, {"models/backend/policies/sweet/seed1": "abc123"})
    assert records == {"seed1": {**record, "checkpoint_hash": "abc123"}}  # in-process agents serve nothing


def test_the_documented_gpu_server_is_a_valid_served_agent():
    blocks = re.findall(r"```yaml\n(.*?)```", (ROOT / "docs/usage.md").read_text(), re.DOTALL)
    documented = [yaml.safe_load(b)["evaluate"]["policy"] for b in blocks if "backend: served" in b]
    assert len(documented) == 1
    policy = ServedAgentParams(**documented[0])
    assert policy.server.command[:2] == ["vllm", "serve"]
    assert served_record(policy.server, "models/backend/base")["command"][2] == "models/backend/base"


@pytest.mark.parametrize("missing", ["{checkpoint}", "{port}"])
def test_a_command_without_a_placeholder_is_refused_naming_the_key(missing, tmp_path):
    command = [a for a in project_params().agents["served_base"].server.command if missing not in a]
    raw = merge(
        yaml.safe_load((ROOT / "params.yaml").read_text()),
        {"agents": {"served_base": {"server": {"command": command}}}},
    )
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw))
    with pytest.raises(ParamsError, match=rf"agents\.served_base\.server: .*has no \{{{missing[1:-1]}\}}"):
        load_params(tmp_path / "params.yaml")


def test_an_unknown_program_is_an_input_error(checkpoint_dir):
    command = ["no-such-server-program", "{checkpoint}", "{port}"]
    with pytest.raises(InputError, match="'no-such-server-program' not found"), serve(server(command), checkpoint_dir):
        pass


def test_a_directory_without_a_checkpoint_is_not_served(tmp_path):
    params = project_params().agents["served_base"].server
    with pytest.raises(InputError, match="not a checkpoint directory"), serve(params, tmp_path):
        pass


# ----- error paths: a clear error with the log's tail, and no process left -----


def test_a_server_that_exits_at_once_fails_with_its_log_tail(checkpoint_dir):
    command, marker = with_marker("""
        import sys
        print("loading", sys.argv[2])
        print("CUDA out of memory (a stand-in for why a server dies)", file=sys.stderr)
        sys.exit(3)
    """)
    started = time.monotonic()
    with pytest.raises(ServerError) as info, serve(server(command), checkpoint_dir):
        pytest.fail("a dead server was yielded")
    message = str(info.value)
    assert "exited with code 3 before it was ready" in message
    assert f"loading {checkpoint_dir}" in message and "CUDA out of memory" in message  # stdout and stderr
    assert f"{marker} {checkpoint_dir} {{port}}" in message  # the command, as recorded
    assert time.monotonic() - started < 20  # not the startup timeout
    assert gone(marker)


def test_a_server_that_never_gets_ready_times_out_and_is_stopped_with_its_children(checkpoint_dir):
    """It listens nowhere and starts a child of its own: on the timeout both are gone."""
    command, marker = with_marker("""
        import subprocess, sys, time
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", sys.argv[1]])
        print("still loading", flush=True)
        time.sleep(600)
    """)
    with pytest.raises(ServerError) as info, serve(server(command, startup_timeout_s=3.0), checkpoint_dir):
        pytest.fail("a server that never answered was yielded")
    assert "did not answer /health within 3 s" in str(info.value) and "still loading" in str(info.value)
    assert gone(marker)


def test_a_stage_killed_outright_takes_its_server_along(checkpoint_dir, tmp_path):
    """SIGKILL leaves no `finally` to run: the parent-death signal stops the server."""
    command, marker = with_marker("import time; time.sleep(600)")
    script = tmp_path / "stage.py"
    script.write_text(
        textwrap.dedent(f"""
        from sweetflow.agents.server import serve
        from sweetflow.core.params import ServerParams
        params = ServerParams(command={command!r}, model="m", startup_timeout_s=600, threads=1)
        with serve(params, {str(checkpoint_dir)!r}):
            pass
    """)
    )
    stage = subprocess.Popen([PY, str(script)], env={**os.environ, "PYTHONPATH": str(Path.cwd())})
    deadline = time.monotonic() + 60
    while not processes(marker):
        assert stage.poll() is None and time.monotonic() < deadline, "the server never started"
        time.sleep(0.1)
    os.kill(stage.pid, signal.SIGKILL)
    stage.wait()
    assert gone(marker)


# ----- a real `transformers serve` -----


def views(n: int) -> list[EpisodeView]:
    return [
        EpisodeView(
            f"t{i}",
            "Write a function that adds two numbers.",
            [Message("agent", "What")][: i % 2],
            seed=i,
            max_turns=10,
        )
        for i in range(n)
    ]


def test_the_served_agent_generates_through_its_own_server_and_stops_it_on_an_interrupt(tiny_checkpoint):
    params = (
        project_params()
        .agents["served_base"]
        .model_copy(
            update={"checkpoint": str(tiny_checkpoint), "server": cpu_server(), "max_new_tokens": 8, "concurrency": 2}
        )
    )
    # The session's shared server (`openai_server`) may serve the same checkpoint: the agent's own is the new child.
    before = set(psutil.Process().children())
    with pytest.raises(KeyboardInterrupt), open_model_agent(params) as agent:
        (server,) = (p for p in set(psutil.Process().children()) - before if str(tiny_checkpoint) in p.cmdline())
        turns = agent.act(views(3))
        raise KeyboardInterrupt
    assert all(isinstance(t, AgentTurn) and t.raw is not None for t in turns)
    # `transformers serve` returns no log-probs: none are made up; the token count comes from `usage`.
    assert all(t.logprob_sum is None and t.logprob_mean is None and 1 <= t.n_tokens <= 8 for t in turns)
    # is_running() compares the start time too: its pid may already be another process's (the suite forks
    # thousands of sandbox children, and pids wrap).
    assert not server.is_running() or server.status() == psutil.STATUS_ZOMBIE


def test_a_server_asked_for_another_model_name_fails_at_start(tiny_checkpoint):
    params = cpu_server().model_copy(update={"model": "some-other-model"})
    with pytest.raises(ServerError, match="does not serve model 'some-other-model'"), serve(params, tiny_checkpoint):
        pytest.fail("a server of another model was yielded")
