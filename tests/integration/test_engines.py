"""DVC and Snakemake, the two engines of the one DAG: the same stages, each rule asking for what its
stage declares, and the same artifacts from both (compared with the reproduced project's)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sweetflow.core.artifacts import content_hash
from sweetflow.dag import StageSpec, load_stages, rule_name
from tests.support.project import ROOT, SMALL_PARAMS, dvc_status, make_project, run
from tests.support.reproduced import CHECKPOINT_FILES, DATA_OUTS, METRICS


def test_both_engines_name_the_same_stages():
    dvc = run(["dvc", "stage", "list", "--name-only"], ROOT).stdout.split()
    snake = run(["snakemake", "--list-rules"], ROOT).stdout.split()
    assert sorted(rule_name(s) for s in dvc) == sorted(r for r in snake if r != "all")
    assert {s.name for s in load_stages(ROOT)} == set(dvc)


def test_snakemake_lint_is_clean():
    result = run(["snakemake", "--lint"], ROOT, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_snakemake_refuses_an_unknown_method_before_any_rule_runs(tmp_path):
    """A stage reads only the knobs every method spells, and any method's name; the Snakefile reads each
    policy by its method."""
    project = make_project(tmp_path / "project", {"policies": {"mtdpo": {"method": "dpo"}}})
    result = run(["snakemake", "-n", "--cores", "1"], project, check=False)
    assert result.returncode != 0
    assert "policies.mtdpo.method: unknown method 'dpo'; known methods:" in result.stdout + result.stderr


def test_each_rule_asks_for_what_its_stage_declares():
    """The Snakefile makes a stage's meta.resources its rule's threads and resources (dry run)."""
    stages = {s.rule_name: s.resources for s in load_stages(ROOT)}
    plan = run(["snakemake", "-n", "--forceall", "--cores", "8", "policy_backend_sweet"], ROOT).stdout
    jobs = re.findall(r"rule (\w+):.*?threads: (\d+)\n\s+resources: ([^\n]+)", plan, re.DOTALL)
    assert {"tasks_backend", "critic_backend_with_info", "policy_backend_sweet"} <= {rule for rule, _, _ in jobs}
    for rule, threads, resources in jobs:
        declared = dict(item.split("=", 1) for item in resources.split(", "))
        assert int(threads) == stages[rule].cpus, rule
        assert {k: int(declared[k]) for k in stages[rule].snakemake()} == stages[rule].snakemake(), rule
        assert ("gpu" in declared) == (stages[rule].gpus > 0), rule


def upstream(stages: list[StageSpec], target: str) -> list[StageSpec]:
    """`target` and every stage whose outputs it reads, directly or through others."""
    by_name = {s.name: s for s in stages}
    found: dict[str, StageSpec] = {}
    todo = [target]
    while todo:
        stage = by_name[todo.pop()]
        if stage.name in found:
            continue
        found[stage.name] = stage
        todo += [
            other.name
            for other in stages
            for out in other.outs
            for dep in stage.deps
            if Path(out).is_relative_to(dep) or Path(dep).is_relative_to(out)
        ]
    return list(found.values())


def test_dvc_and_snakemake_produce_identical_artifacts_and_snakemakes_are_shared_through_dvc(
    request: pytest.FixtureRequest, tmp_path: Path
):
    """Snakemake runs the backend's SWEET-RL chains (both critics), through the policies'
    evaluations, in a fresh copy: every artifact it writes equals DVC's. (A part of the DAG,
    training included, keeps this test to minutes; that both engines know every stage is checked
    above.) Its outputs are then shared the documented way: `dvc commit` records them in dvc.lock,
    `dvc push` sends them to a remote, and a teammate's clone pulls them with nothing left to run."""
    targets = ["evaluate_policy@backend-sweet", "evaluate_policy@backend-sweet_no_info"]
    snake_project = make_project(tmp_path / "snake", SMALL_PARAMS)
    # One thread a rule, as SMALL_PARAMS trains (the declared cores are the paper's): two run at once.
    run(
        [
            "snakemake",
            "--profile",
            "workflow/profiles/default",
            "--cores",
            "2",
            "--max-threads",
            "1",
            *map(rule_name, targets),
        ],
        snake_project,
    )
    stages = load_stages(snake_project)
    outs = [Path(out) for target in targets for stage in upstream(stages, target) for out in stage.outs]
    assert {"models/backend/base", "data/backend/step_pairs/with_info", "data/backend/evaluations/sweet"} <= {
        out.as_posix() for out in outs
    }
    compared = [p for p in DATA_OUTS + METRICS + CHECKPOINT_FILES if any(Path(p).is_relative_to(out) for out in outs)]
    assert len(compared) >= 15
    # Asked for only now: while the other worker builds the reproduced project, Snakemake ran beside it.
    repro_project = request.getfixturevalue("repro_project")
    for path in compared:
        assert content_hash(snake_project / path) == content_hash(repro_project / path), path
    assert not (snake_project / "data/frontend/tasks").exists()  # only the targets' part of the DAG ran

    run(["dvc", "commit", "--force", "--with-deps", *targets], snake_project)
    assert dvc_status(snake_project, "--with-deps", *targets) == {}
    run(["dvc", "remote", "add", "-d", "shared", str(tmp_path / "remote")], snake_project)
    run(["git", "add", "-A"], snake_project)
    run(["git", "commit", "-qm", "snakemake's outputs, committed to DVC"], snake_project)
    run(["dvc", "push", "-q", "--with-deps", *targets], snake_project)
    clone = tmp_path / "teammate"
    run(["git", "clone", "-q", str(snake_project), str(clone)], tmp_path)
    run(["dvc", "pull", "-q", "--with-deps", *targets], clone)
    assert dvc_status(clone, "--with-deps", *targets) == {}
    for path in compared:
        assert content_hash(clone / path) == content_hash(snake_project / path), path
