"""Fixtures shared by the whole suite: the reproduced small project, the real OpenAI-compatible
server (`tests.support.llm_server`) and a small task corpus with demonstrations (`tests.support.corpus`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import settings

from tests.support.reproduced import reproduced_project

pytest_plugins = [
    "tests.support.llm_server",
    "tests.support.corpus",
    "tests.support.devices",
    "tests.support.served_episodes",
]

# No per-example deadline: the suite runs two workers on two cores beside other jobs, and an example
# that is slow there is not wrong. Speed is measured by the benchmarks under bench/, not by tests.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")


@pytest.fixture(scope="session")
def repro_project(tmp_path_factory) -> Path:
    """One small project on which `dvc repro` has run, built once per run (tests.support.reproduced)."""
    return reproduced_project(tmp_path_factory)


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


# The slowest files first (figures: `pytest --durations`), the project's build first of all: under
# `pytest -n 2 --dist loadfile` they start at once and the many quick files fill in after them, instead
# of a long file starting last. xdist would otherwise order files by their number of tests.
SLOWEST_FIRST = (
    "tests/integration/test_pipeline.py",  # builds the reproduced project, which four more files read
    "tests/integration/test_stock_templates.py",
    "tests/integration/test_real_model.py",
    "tests/integration/test_import_pipeline.py",
    "tests/integration/test_engines.py",  # Snakemake runs before the test asks for the project
    "tests/integration/test_new_method.py",
    "tests/integration/test_run_cache.py",
    "tests/integration/test_served_pipeline.py",
    "tests/integration/test_pipeline_changes.py",
    "tests/integration/test_portable_kernels.py",
    "tests/unit/frontend/test_render.py",
    "tests/integration/test_benches.py",
    "tests/integration/test_distributed_training.py",
)


def pytest_configure(config):
    if hasattr(config.option, "loadscopereorder"):  # xdist's option, absent under -p no:xdist
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(items):
    rank = {path: i for i, path in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))  # stable: the rest keep their order
