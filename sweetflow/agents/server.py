"""A checkpoint served by an OpenAI-compatible server on loopback, for the length of a `with` block.

    with serve(params.server, "models/backend/policies/sweet/seed0") as server:
        ...  # chat completions at server.base_url, for model server.model

The server's command line comes from params (`ServerParams.command`): `vllm serve {checkpoint} ...`
on GPUs, `transformers serve {checkpoint} ...` on a CPU. It starts in a session of its own (so that
a Ctrl-C reaches the stage, which then stops it, and its children go with it), with a parent-death
signal (a stage killed outright takes it along), offline (HF_HUB_OFFLINE=1) and with a throw-away
HF_HOME. It is ready when `GET /health` answers 200 (vLLM and `transformers serve` both answer it
once the model is loaded) and a one-token request for `server.model` succeeds, so that a wrong
model name fails here, once, and not in every episode. A server that exits first, or is not ready
within `startup_timeout_s`, raises `ServerError` with the tail of its log. Leaving the block stops
it: SIGTERM to its process group, SIGKILL if it lingers.

What `transformers serve` (5.x) does that matters:
- The checkpoint is its positional argument (a forced model): it loads it before it listens, and a
  request's `model` must then be that same string (anything else is a 400). So a completed request
  for `{checkpoint}` proves which checkpoint answered it.
- `GET /v1/models` lists only the hub cache, never the forced directory, and fails unless
  `$HF_HOME/hub` exists: the fresh HF_HOME has an empty `hub`, and readiness is probed on /health.
- It runs one `generate()` at a time: concurrent requests queue. `--continuous-batching` batches
  them, but the sampling parameters of its first request then apply to every later one.
- `logprobs` is accepted and ignored (the answer's `logprobs` is None; `usage` still counts the
  tokens); `seed` works per request. vLLM returns log-probs.
- A prompt as long as the model's context (`max_position_embeddings`, or `--max-model-len`) is refused
  with a 400 whose reason is `{"detail": ...}`, not OpenAI's `{"error": {...}}` (seen with 5.25;
  `sweetflow.endpoint.PromptTooLong`). vLLM refuses such a prompt too.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sweetflow.core.errors import InputError, StageFailed
from sweetflow.core.params import EndpointParams, ServerParams
from sweetflow.endpoint import ChatClient, EndpointError

HOST = "127.0.0.1"
HEALTH = "/health"
# The port is not part of what was served: it is left as its placeholder in the recorded command.
PORT_PLACEHOLDER, CHECKPOINT_PLACEHOLDER = "{port}", "{checkpoint}"
LOG_TAIL_LINES = 40


class ServerError(StageFailed):
    """The server exited before it was ready, or was not ready in time; the message has its log's tail."""


@dataclass(frozen=True)
class Server:
    base_url: str  # http://127.0.0.1:PORT/v1, what an OpenAI client takes
    model: str  # the `model` of every request


def fill(template: str, checkpoint: str | Path, port: int | str) -> str:
    """One argument of the command (or the model name) with its placeholders filled in. Plain
    replacement, not str.format: an argument may hold other braces (a JSON option of vLLM's)."""
    return template.replace(CHECKPOINT_PLACEHOLDER, str(checkpoint)).replace(PORT_PLACEHOLDER, str(port))


def served_record(params: ServerParams, checkpoint: str | Path) -> dict:
    """What a stage records of a server it ran: the checkpoint, the model name it was asked for, and
    the command line (the port, which differs between runs, left as {port})."""
    return {
        "checkpoint": Path(checkpoint).as_posix(),
        "model": fill(params.model, checkpoint, PORT_PLACEHOLDER),
        "command": [fill(arg, checkpoint, PORT_PLACEHOLDER) for arg in params.command],
    }


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def resolve_program(name: str) -> str:
    """A bare program name is looked up beside the running Python first (the venv's `bin`, where
    `transformers` and `vllm` are installed even when the venv is not on PATH), then on PATH."""
    if os.sep in name:
        return name
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which(name)
    if found is None:
        raise InputError(f"server command: program {name!r} not found beside {sys.executable} or on PATH")
    return found


def _parent_death_signal():
    """What the child runs before exec: SIGTERM to it when the thread that started it dies (Linux's
    PR_SET_PDEATHSIG), so that a stage killed with SIGKILL leaves no server behind. libc is looked
    up here, in the parent: loading a library in a child forked from a threaded process may hang."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # not Linux: the `finally` of `serve` is all there is
        return None
    parent = os.getpid()

    def arm() -> None:
        prctl(1, signal.SIGTERM)  # 1: PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the parent died before the signal was armed
            os._exit(1)

    return arm


@contextlib.contextmanager
def serve(params: ServerParams, checkpoint: str | Path) -> Iterator[Server]:
    """Start the server `params` describe for `checkpoint` on a free loopback port, yield it once it
    is ready, and stop it on leaving (on an error or a Ctrl-C too)."""
    checkpoint = Path(checkpoint)
    if not (checkpoint / "config.json").is_file():
        raise InputError(f"{checkpoint}: not a checkpoint directory (no config.json) to serve")
    port = free_port()
    command = [fill(arg, checkpoint, port) for arg in params.command]
    command[0] = resolve_program(command[0])
    shown = " ".join(served_record(params, checkpoint)["command"])
    with tempfile.TemporaryDirectory(prefix="sweetflow-serve-") as tmp:
        hf_home = Path(tmp) / "hf_home"
        (hf_home / "hub").mkdir(parents=True)
        log_path = Path(tmp) / "server.log"
        env = dict(
            os.environ,
            HF_HOME=str(hf_home),
            HF_HUB_OFFLINE="1",
            TRANSFORMERS_OFFLINE="1",
            HF_HUB_DISABLE_TELEMETRY="1",
            PYTHONUNBUFFERED="1",
        )
        if params.threads:
            env.update(OMP_NUM_THREADS=str(params.threads), MKL_NUM_THREADS=str(params.threads))
        with open(log_path, "wb") as log:
            # preexec_fn runs in the forked child before exec: what it calls is resolved in the parent.
            proc = subprocess.Popen(
                command,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
                preexec_fn=_parent_death_signal(),  # noqa: PLW1509
            )
        try:
            server = Server(f"http://{HOST}:{port}/v1", fill(params.model, checkpoint, port))
            _wait_until_ready(proc, server, params.startup_timeout_s, log_path, shown)
            yield server
        finally:
            stop(proc)


# Straight to loopback, whatever *_proxy variables the environment has.
_direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _wait_until_ready(proc: subprocess.Popen, server: Server, timeout: float, log_path: Path, shown: str) -> None:
    health = server.base_url.removesuffix("/v1") + HEALTH
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise ServerError(
                f"`{shown}` exited with code {proc.returncode} before it was ready.\n"
                f"--- server log (tail) ---\n{_tail(log_path)}"
            )
        try:
            with _direct.open(health, timeout=2) as resp:
                if resp.status == 200:
                    break
        except (urllib.error.URLError, OSError):
            pass
        if time.monotonic() > deadline:
            raise ServerError(
                f"`{shown}` did not answer {HEALTH} within {timeout:g} s.\n--- server log (tail) ---\n{_tail(log_path)}"
            )
        time.sleep(0.2)
    # A loopback server takes no key: the empty variable name reads none.
    probe = EndpointParams(
        base_url=server.base_url,
        model=server.model,
        api_key_env="",
        timeout_s=max(deadline - time.monotonic(), 5.0),
        max_retries=0,
        concurrency=1,
    )
    try:
        ChatClient(probe, record=False).complete([{"role": "user", "content": "ready?"}], temperature=0.0, max_tokens=1)
    except EndpointError as e:
        raise ServerError(
            f"`{shown}` is up but does not serve model {server.model!r} (server.model in params): {e}\n"
            f"--- server log (tail) ---\n{_tail(log_path)}"
        ) from None


def stop(proc: subprocess.Popen, grace_s: float = 15.0) -> None:
    """SIGTERM to the server's process group (uvicorn and vLLM shut down in seconds), SIGKILL to
    what is left after `grace_s`; returns once the server itself is reaped."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            pass
    # Children it left in its group (a vLLM engine process) go too.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
