"""Fixtures shared by the whole suite: the reproduced small project, the real OpenAI-compatible
server (`tests.support.llm_server`) and a small task corpus with demonstrations (`tests.support.corpus`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import settings

from tests.support.project import SMALL_PARAMS, make_project, run

pytest_plugins = ["tests.support.llm_server", "tests.support.corpus"]

# No per-example deadline: the suite runs two workers on two cores beside other jobs, and an example
# that is slow there is not wrong. Speed is measured by the benchmarks under bench/, not by tests.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")


@pytest.fixture(scope="session")
def repro_project(tmp_path_factory) -> Path:
    """One small project on which `dvc repro` has run; tests that only read it share it."""
    project = make_project(tmp_path_factory.mktemp("dvc") / "project", SMALL_PARAMS)
    run(["dvc", "repro", "--quiet"], project, timeout=1800)  # a shared machine may be slow
    run(["git", "add", "-A"], project)
    run(["git", "commit", "-q", "-m", "repro"], project)
    return project


@pytest.fixture(autouse=True, scope="session")
def _one_thread():
    """One torch thread in the test process: the tiny model's matrices are too small to share, and
    tests run two at a time (pytest -n 2) on this 2-core machine."""
    import torch

    torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def _no_endpoint_answers_from_earlier_tests():
    """A stage runs in a process of its own, and its manifest records what every endpoint the process
    asked answered; a test is such a process for what it calls, not for the tests before it."""
    from sweetflow.core import artifacts

    artifacts._ANSWERED.clear()
