"""The DAG's code dependencies: every stage depends on every file of the project whose code it runs."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from sweetflow.dag import code_closure, load_stages, uncovered_code
from tests.support.project import ROOT

STAGES = load_stages(ROOT)


@pytest.mark.parametrize("spec", STAGES, ids=lambda s: s.name)
def test_every_stage_depends_on_the_code_it_imports(spec):
    assert spec.module, f"{spec.name}: its cmd runs no stage module"
    assert uncovered_code(spec) == [], f"{spec.name}: add these to its deps in dvc.yaml"


def test_a_dependency_left_out_is_named():
    critic = next(s for s in STAGES if s.name == "critic@backend-with_info")
    without = dataclasses.replace(critic, deps=tuple(d for d in critic.deps if d != "sweetflow/views.py"))
    assert uncovered_code(without) == ["sweetflow/views.py"]
    without = dataclasses.replace(critic, deps=tuple(d for d in critic.deps if d != "sweetflow/rl"))
    assert "sweetflow/rl/loss.py" in uncovered_code(without)


def test_the_sandbox_worker_is_code_of_every_stage_that_runs_answers():
    """The worker is started as `python -m ...`, not imported; its module name is what links it."""
    runs_answers = [s for s in STAGES if s.domain == "backend" and "sweetflow/backend/sandbox/worker.py" in
                    code_closure(s.module, ["backend"])]  # fmt: skip
    names = {s.name.split("@")[0] for s in runs_answers}
    assert {"tasks", "score_references", "evaluate", "demos", "rollout", "evaluate_base", "critic_check",
            "evaluate_policy"} <= names  # fmt: skip
    assert not names & {"critic", "policy", "rank", "candidates", "trajectory_pairs", "step_pairs", "base_model"}


def test_a_domain_stage_loads_only_its_own_domain():
    backend = code_closure("stages.evaluate", ["backend"])
    assert "sweetflow/backend/domain.py" in backend and not any(p.startswith("sweetflow/frontend") for p in backend)


def test_package_init_files_hold_no_code():
    """A package's __init__.py runs whenever any of its modules is imported; it holds only a
    docstring, so that no stage needs to depend on it (code_closure leaves them out)."""
    for init in sorted((ROOT / "sweetflow").rglob("__init__.py")) + [ROOT / "stages/__init__.py"]:
        body = ast.parse(init.read_text()).body
        code = [n for n in body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
        assert not code, f"{Path(init).relative_to(ROOT)}: code in a package's __init__.py"
