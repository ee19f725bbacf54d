"""The catalogue of task families: every family of every theme module is listed once, and every
family's references, run in the real sandbox as the tasks stage runs them, pass their own tests."""

from __future__ import annotations

import importlib
import pkgutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sweetflow.backend.sandbox.pool import Sandbox
from sweetflow.backend.scoring import check_references
from sweetflow.backend.tasks import themes
from sweetflow.backend.tasks.families import FAMILIES, FAMILIES_BY_NAME
from sweetflow.backend.tasks.family import Family
from sweetflow.backend.tasks.procedural import N_TESTS, generate_tasks
from tests.support.params import sandbox_params

THEME_MODULES = [importlib.import_module(f"{themes.__name__}.{m.name}") for m in pkgutil.iter_modules(themes.__path__)]


def _defined(module) -> list[Family]:
    return [value for value in vars(module).values() if isinstance(value, Family)]


def test_every_family_of_every_theme_is_in_the_catalogue_once():
    defined = [family for module in THEME_MODULES for family in _defined(module)]
    assert len(THEME_MODULES) >= 2 and all(_defined(module) for module in THEME_MODULES)
    assert sorted(f.name for f in defined) == sorted(f.name for f in FAMILIES)
    assert all(FAMILIES_BY_NAME[f.name] is f for f in defined)


@pytest.mark.parametrize("module", THEME_MODULES, ids=lambda m: m.__name__.rsplit(".", 1)[1])
def test_a_theme_module_is_a_few_families_long(module):
    """A room a reader takes in: a handful of families, each a screen or so."""
    assert len(_defined(module)) <= 5
    assert len(open(module.__file__).read().splitlines()) <= 100 * len(_defined(module))  # as ruff formats it


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(sandbox_params(workers=1)) as sb:
        yield sb


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1))
def test_every_family_yields_references_that_pass_their_own_tests_in_the_sandbox(sandbox, seed):
    """One test task of each family from a drawn seed: run twice in the sandbox, unflagged, 10 of 10."""
    _, tasks = generate_tasks(0, len(FAMILIES), seed=seed)
    assert sorted(t["family"] for t in tasks) == sorted(FAMILIES_BY_NAME)
    checks = check_references(tasks, sandbox)
    failing = {
        t["family"]: (c.reference_passes, c.flags)
        for t, c in zip(tasks, checks)
        if c.reference_passes != N_TESTS or c.flags
    }
    assert failing == {}
