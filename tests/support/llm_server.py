"""Test infrastructure: a real OpenAI-compatible server (`transformers serve`) on loopback.

Not a test module. Tests use it either directly,

    with serve_checkpoint(path) as (base_url, model):
        OpenAI(base_url=base_url, api_key="unused").chat.completions.create(model=model, ...)

or through the session fixtures `tiny_checkpoint` (a tiny Llama checkpoint built from a small
corpus, once per session) and `openai_server` (that checkpoint served, once per session), which
tests/conftest.py registers as a plugin for every test module.

The server is the product's own (`sweetflow.agents.server`, whose docstring says what `transformers
serve` does that matters), started with the command of params.yaml's `agents.served_base`. Measured
here with the tiny model and one thread: ~17 completions/s of 32 tokens at concurrency 1 and at 4
(one generate at a time); `--continuous-batching` (`extra_args`) ~47/s at concurrency 4, but with the
sampling parameters of the server's first request for every later one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

from sweetflow.agents.server import serve
from sweetflow.core.params import ServerParams
from tests.support.params import project_params

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


def cpu_server(
    startup_timeout: float = 120.0, extra_args: tuple[str, ...] = (), threads: int | None = 1
) -> ServerParams:
    """params.yaml's `transformers serve` on a CPU (`agents.served_base.server`), with these knobs."""
    server = project_params().agents["served_base"].server
    return server.model_copy(
        update={
            "command": [*server.command, *extra_args],
            "startup_timeout_s": startup_timeout,
            "threads": threads or 0,
        }
    )


@contextlib.contextmanager
def serve_checkpoint(
    path: str | Path, startup_timeout: float = 120.0, extra_args: tuple[str, ...] = (), threads: int | None = 1
) -> Iterator[ServedModel]:
    """Serve a local checkpoint directory with `transformers serve` on 127.0.0.1 and yield
    `(base_url, model_name)` once it answers; the server is always stopped on exit.

    `threads` caps torch's intra-op threads in the server (OMP_NUM_THREADS). One is the default:
    a tiny model's matrices are too small to split, and on this 2-core machine two threads made
    generation about 10x slower than one (they spin against each other and against the test
    process). None leaves torch's default (all cores), which suits real-sized models.
    """
    with serve(cpu_server(startup_timeout, extra_args, threads), path) as server:
        yield ServedModel(server.base_url, server.model)


def build_tiny_checkpoint(dest: Path, texts: list[str] = CORPUS, vocab_size: int = 384, max_length: int = 4096) -> Path:
    """A tiny, untrained Llama checkpoint (random weights: it talks nonsense, fast).

    Its context (`max_length`) is a real model's, not the pipeline's tiny one: `transformers serve`
    (5.25) answers 400 to a prompt longer than the model's `max_position_embeddings`, and with this
    384-token vocabulary a task's system and user messages alone take ~850 tokens."""
    from sweetflow.models.checkpoint import save_checkpoint
    from sweetflow.models.tiny import build_model, train_tokenizer

    tokenizer = train_tokenizer(texts, vocab_size=vocab_size, max_turns=10, max_length=max_length)
    return save_checkpoint(build_model(tokenizer, max_length=max_length, seed=0), tokenizer, dest)


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory) -> Path:
    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny") / "checkpoint")


@pytest.fixture(scope="session")
def openai_server(tiny_checkpoint) -> Iterator[ServedModel]:
    with serve_checkpoint(tiny_checkpoint) as served:
        yield served
