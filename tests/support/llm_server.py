"""Test infrastructure: a real OpenAI-compatible server (`transformers serve`) on loopback.

Not a test module. Tests use it either directly,

    with serve_checkpoint(path) as (base_url, model):
        OpenAI(base_url=base_url, api_key="unused").chat.completions.create(model=model, ...)

or through the session fixtures `tiny_checkpoint` (a tiny Llama checkpoint built from a small
corpus, once per session) and `openai_server` (that checkpoint served, once per session), which
tests/conftest.py registers as a plugin for every test module.

What `transformers serve` (5.23) does that matters here:
- The checkpoint is passed as the positional FORCE_MODEL: the server preloads it before it starts
  listening, so once `/health` answers, generation is ready. The request's `model` must then be
  that same string (or absent): anything else is a 400.
- `GET /v1/models` lists only models in the Hugging Face hub cache, never the forced local
  directory, and fails unless `$HF_HOME/hub` exists: we give each server a fresh HF_HOME with an
  empty `hub`, so it answers `{"data": []}`. Readiness is therefore probed on `/health`.
- It runs one `generate()` at a time: concurrent requests queue (measured here with the tiny
  model and one thread: ~17 completions/s of 32 tokens at concurrency 1 and at 4).
  `--continuous-batching` (pass it in `extra_args`) batches them (~47/s at concurrency 4), but
  then the sampling parameters (temperature, top_p) of the server's FIRST request apply to every
  later one; only max_tokens stays per request. Keep it off where requests differ in temperature.
- `logprobs`, `top_logprobs` and `n` are accepted but ignored, with a warning in the server log:
  the answer has one choice and `logprobs` is None. `seed` works per request.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

# A few lines in the register of the tasks: enough for a byte-level BPE to learn some merges.
CORPUS = [
    "I need a function that computes the shipping cost for an order of 12 items.",
    "How much does each item weigh? Each item weighs 3 kilograms.",
    "What is the base fee? The base fee is 45 dollars and the rate is 7 per kilogram.",
    "I WANT TO ANSWER: def shipping_cost(items): return 45 + 7 * 3 * items",
    "def discount(price, percent):\n    return price * (100 - percent) / 100",
    "Should the result be rounded? Yes, round it to 2 decimal places.",
    "I don't know. Please ask about the numbers you need.",
] * 8


class ServedModel(NamedTuple):
    base_url: str  # e.g. http://127.0.0.1:PORT/v1, what `OpenAI(base_url=...)` takes
    model_name: str  # the value for the request's `model` field


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_command(path: str | Path, port: int, extra_args: tuple[str, ...] = ()) -> list[str]:
    """The command line: `transformers serve <checkpoint> --host 127.0.0.1 --port P --device cpu`,
    run with this interpreter so that it uses the same environment as the tests."""
    return [
        sys.executable, "-m", "transformers.cli.transformers", "serve", str(path),
        "--host", "127.0.0.1", "--port", str(port), "--device", "cpu", *extra_args,
    ]  # fmt: skip


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@contextlib.contextmanager
def serve_checkpoint(
    path: str | Path,
    port: int | None = None,
    startup_timeout: float = 120.0,
    extra_args: tuple[str, ...] = (),
    threads: int | None = 1,
) -> Iterator[ServedModel]:
    """Serve a local checkpoint directory with `transformers serve` on 127.0.0.1 and yield
    `(base_url, model_name)` once it answers; the server is always terminated on exit.

    Offline by construction: HF_HUB_OFFLINE=1 and a throw-away HF_HOME (with the `hub` folder that
    `GET /v1/models` needs), so a missing file fails instead of reaching for the network.

    `threads` caps torch's intra-op threads in the server (OMP_NUM_THREADS). One is the default:
    a tiny model's matrices are too small to split, and on this 2-core machine two threads made
    generation about 10x slower than one (they spin against each other and against the test
    process). None leaves torch's default (all cores), which suits real-sized models.
    """
    path = Path(path)
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"{path} is not a checkpoint directory (no config.json)")
    port = port or free_port()
    model_name = str(path)
    with tempfile.TemporaryDirectory(prefix="sweetflow-serve-") as tmp:
        hf_home = Path(tmp) / "hf_home"
        (hf_home / "hub").mkdir(parents=True)
        log_path = Path(tmp) / "server.log"
        env = dict(os.environ)
        env.update(
            HF_HOME=str(hf_home),
            HF_HUB_OFFLINE="1",
            TRANSFORMERS_OFFLINE="1",
            HF_HUB_DISABLE_TELEMETRY="1",
            PYTHONUNBUFFERED="1",
        )
        if threads is not None:
            env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
        cmd = serve_command(path, port, extra_args)
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
        try:
            _wait_until_up(proc, f"http://127.0.0.1:{port}/health", startup_timeout, log_path, cmd)
            yield ServedModel(f"http://127.0.0.1:{port}/v1", model_name)
        finally:
            _stop(proc)


# Straight to loopback, whatever *_proxy variables the environment has.
_direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _wait_until_up(proc: subprocess.Popen, health_url: str, timeout: float, log_path: Path, cmd: list[str]) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError(
                f"`{' '.join(cmd)}` exited with code {proc.returncode} before answering.\n"
                f"--- server log (tail) ---\n{_tail(log_path)}"
            )
        try:
            with _direct.open(health_url, timeout=2) as resp:
                if resp.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"`{' '.join(cmd)}` did not answer {health_url} within {timeout:.0f} s.\n"
                f"--- server log (tail) ---\n{_tail(log_path)}"
            )
        time.sleep(0.2)


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM (uvicorn shuts down gracefully in a second or two), SIGKILL if it lingers."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=15)


def build_tiny_checkpoint(dest: Path, texts: list[str] = CORPUS, vocab_size: int = 384) -> Path:
    """A tiny, untrained Llama checkpoint (random weights: it talks nonsense, fast)."""
    from sweetflow.models.checkpoint import save_checkpoint
    from sweetflow.models.tiny import build_model, train_tokenizer

    tokenizer = train_tokenizer(texts, vocab_size=vocab_size)
    return save_checkpoint(build_model(tokenizer, seed=0), tokenizer, dest)


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory) -> Path:
    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny") / "checkpoint")


@pytest.fixture(scope="session")
def openai_server(tiny_checkpoint) -> Iterator[ServedModel]:
    with serve_checkpoint(tiny_checkpoint) as served:
        yield served
