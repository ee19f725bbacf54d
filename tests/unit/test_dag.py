"""The DAG's dependencies: every stage depends on every file of the project whose code it runs, and on
every file that params name for it."""

from __future__ import annotations

import ast
import dataclasses
import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from types import UnionType
from typing import Annotated, Union, get_args, get_origin

import pytest
import yaml
from pydantic import BaseModel

from sweetflow.cli import main
from sweetflow.core.params import DOMAINS, InputDir, ParamsError
from sweetflow.dag import (
    code_closure,
    load_stages,
    snakemake_inputs,
    stage_resources,
    sync_code_deps,
    uncovered_code,
)
from sweetflow.params import Params, load_params
from tests.support.project import ROOT

STAGES = load_stages(ROOT)


@pytest.mark.parametrize("spec", STAGES, ids=lambda s: s.name)
def test_every_stage_depends_on_the_code_it_imports(spec):
    assert spec.module, f"{spec.name}: its cmd runs no stage module"
    assert uncovered_code(spec) == [], f"{spec.name}: its deps in dvc.yaml miss these: run `sweetflow dag sync`"


def test_dvc_yaml_code_deps_are_in_sync():
    """No code dep is missing or stale, and a sync of the committed file rewrites no byte."""
    text, changes = sync_code_deps(ROOT)
    assert [str(c) for c in changes] == [], "dvc.yaml is out of step with the imports: run `sweetflow dag sync`"
    assert text == (ROOT / "dvc.yaml").read_text()


@pytest.fixture
def pipeline(tmp_path: Path) -> Path:
    """The pipeline and its code, in a repository of their own (DVC reads stages only in one)."""
    for name in ("dvc.yaml", "params.yaml", ".dvc/config"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        shutil.copy2(ROOT / name, tmp_path / name)
    for name in ("stages", "sweetflow"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    return tmp_path


def sync(capsys, project: Path, *args: str) -> tuple[int, str]:
    code = main(["dag", "sync", "--root", str(project), *args])
    return code, capsys.readouterr().out


def test_dag_sync_writes_a_new_import_into_every_stage_that_runs_it(pipeline, capsys):
    """One import in the module every stage runs: each entry gets the file, once, after its code
    deps; a line taken out of a domain's entry comes back with the entry's domain argument; a line of
    a module that is gone goes, one of a directory without Python (data) stays; the import taken
    away again, its lines go."""
    before = (pipeline / "dvc.yaml").read_text()
    entries = list(yaml.safe_load(before)["stages"])
    critic = before.index("\n  critic:\n")
    taken = "      - sweetflow/${item.domain}/instructions.py  # what the policy is told\n"
    pairs = "\n      - sweetflow/rl/pairs.py\n"  # step_pairs' last code dep
    kept, gone = "      - sweetflow/report/assets\n", "      - sweetflow/gone.py\n"
    broken = before[:critic] + before[critic:].replace(taken, "", 1).replace(pairs, pairs + kept + gone, 1)
    (pipeline / "dvc.yaml").write_text(broken)
    (pipeline / "sweetflow/probe.py").write_text('"""A module no stage imported before."""\n')
    common = pipeline / "sweetflow/stage.py"
    future = "from __future__ import annotations\n"
    common.write_text(common.read_text().replace(future, future + "\nimport sweetflow.probe\n", 1))

    code, out = sync(capsys, pipeline, "--check")
    assert code == 1 and "run `sweetflow dag sync`" in out
    assert "critic: add sweetflow/${item.domain}/instructions.py" in out
    assert "step_pairs: remove sweetflow/gone.py" in out and "assets" not in out
    assert {line.split(":")[0].strip() for line in out.splitlines() if "add sweetflow/probe.py" in line} == set(entries)
    assert (pipeline / "dvc.yaml").read_text() == broken  # --check wrote nothing

    assert sync(capsys, pipeline)[0] == 0
    synced = (pipeline / "dvc.yaml").read_text()
    assert synced.count("- sweetflow/probe.py\n") == len(entries)
    block = before[critic : before.index("\n  candidates:")]
    last = [line for line in block.splitlines() if line.startswith("      - sweetflow/")][-1]  # its last code dep
    assert f"{last}\n      - sweetflow/${{item.domain}}/instructions.py\n      - sweetflow/probe.py\n" in synced
    code, out = sync(capsys, pipeline)
    assert code == 0 and "in step" in out and (pipeline / "dvc.yaml").read_text() == synced
    assert all("sweetflow/probe.py" in s.deps for s in load_stages(pipeline))  # as DVC resolves it

    common.write_text(common.read_text().replace("\nimport sweetflow.probe\n", "", 1))
    code, out = sync(capsys, pipeline)
    assert code == 0 and "tasks: remove sweetflow/probe.py" in out
    line = f"\n{last}\n"
    back = broken[critic:].replace(line, line + taken.split("  #")[0] + "\n", 1).replace(gone, "", 1)
    assert (pipeline / "dvc.yaml").read_text() == before[:critic] + back


def test_dag_sync_names_a_stage_without_deps(pipeline, capsys):
    meta = "{resources: {cpus: 1, mem_mb: 1000, gpus: 0, runtime: 1}}"
    (pipeline / "dvc.yaml").write_text(f"stages:\n  report:\n    cmd: python -m stages.report\n    meta: {meta}\n")
    code, out = sync(capsys, pipeline)
    assert code == 2 and "stage 'report' has no deps" in out


def test_resources_are_declared_beside_every_stage_and_gpus_only_where_models_run():
    """load_stages reads each stage's meta.resources (it fails on one without); stages that train or
    sample a model ask for a GPU, the others for none, so the executor sends them to a CPU partition."""
    by_kind = {}
    for spec in STAGES:
        by_kind.setdefault(spec.name.split("@")[0], set()).add(spec.resources)
    assert all(len(declared) == 1 for declared in by_kind.values())  # every domain and policy alike
    gpu = {kind for kind, declared in by_kind.items() if next(iter(declared)).gpus}
    assert gpu == {
        "base_model",
        "rollout",
        "evaluate_base",
        "critic",
        "candidates",
        "rank",
        "critic_check",
        "policy",
        "evaluate_policy",
        "validate",
    }
    policy = next(s for s in STAGES if s.name == "policy@backend-sweet").resources
    assert policy.snakemake() == {"mem_mb": policy.mem_mb, "runtime": policy.runtime, "gpu": policy.gpus}
    assert "gpu" not in next(s for s in STAGES if s.name == "tasks@backend").resources.snakemake()


def test_undeclared_or_wrong_resources_name_the_stage_and_field():
    with pytest.raises(ValueError, match=r"dvc.yaml: stage 'rank@backend-x' declares no meta.resources"):
        stage_resources("rank@backend-x", {"owner": "me"})
    with pytest.raises(ValueError) as error:
        stage_resources("rank@backend-x", {"resources": {"cpus": 2, "mem_mb": 8000, "gpus": -1, "minutes": 5}})
    message = str(error.value)
    assert message.startswith("dvc.yaml: stage 'rank@backend-x': ")
    for field in ("meta.resources.gpus", "meta.resources.runtime", "meta.resources.minutes"):
        assert field in message


def test_a_dependency_left_out_is_named():
    critic = next(s for s in STAGES if s.name == "critic@backend-with_info")
    without = dataclasses.replace(critic, deps=tuple(d for d in critic.deps if d != "sweetflow/views.py"))
    assert uncovered_code(without) == ["sweetflow/views.py"]
    without = dataclasses.replace(critic, deps=tuple(d for d in critic.deps if d != "sweetflow/rl/loss.py"))
    assert uncovered_code(without) == ["sweetflow/rl/loss.py"]


def test_the_sandbox_worker_is_code_of_every_stage_that_runs_answers():
    """The worker is started as `python -m ...`, not imported; its module name is what links it."""
    runs_answers = [
        s
        for s in STAGES
        if s.domain == "backend" and "sweetflow/backend/sandbox/worker.py" in code_closure(s.module, ["backend"])
    ]
    names = {s.name.split("@")[0] for s in runs_answers}
    assert {
        "tasks",
        "score_references",
        "evaluate",
        "demos",
        "rollout",
        "evaluate_base",
        "critic_check",
        "candidate_labels",
        "evaluate_policy",
    } <= names
    assert not names & {
        "critic",
        "policy",
        "rank",
        "candidates",
        "trajectory_pairs",
        "step_pairs",
        "base_model",
        "critic_quality",
    }


def test_a_domain_stage_loads_only_its_own_domain():
    """Of another domain's code, only its params: every stage validates params.yaml whole."""
    backend = code_closure("stages.evaluate", ["backend"])
    assert "sweetflow/backend/domain.py" in backend and "sweetflow/frontend/params.py" in backend
    assert [p for p in backend if p.startswith("sweetflow/frontend")] == ["sweetflow/frontend/params.py"]


def test_the_policy_stage_runs_every_method_module_including_one_just_added(tmp_path):
    """Stage policy imports the methods by their package's name, not by an import statement."""
    MODULES = ("params", "training")
    project = tmp_path / "project"
    for package in ("stages", "sweetflow"):
        shutil.copytree(ROOT / package, project / package, ignore=shutil.ignore_patterns("__pycache__"))
    (project / "sweetflow/rl/methods/throwaway").mkdir()
    for module in ("__init__", "params", "training"):
        (project / f"sweetflow/rl/methods/throwaway/{module}.py").write_text("")
    methods = {p for p in code_closure("stages.policy", root=project) if p.startswith("sweetflow/rl/methods/")}
    every = {f"sweetflow/rl/methods/{m}/{f}.py" for m in ("rft", "mtdpo", "sweet", "throwaway") for f in MODULES}
    assert methods == every | {"sweetflow/rl/methods/registry.py"}


def test_package_init_files_hold_no_code():
    """A package's __init__.py runs whenever any of its modules is imported; it holds only a
    docstring, so that no stage needs to depend on it (code_closure leaves them out)."""
    for init in sorted((ROOT / "sweetflow").rglob("__init__.py")) + [ROOT / "stages/__init__.py"]:
        body = ast.parse(init.read_text()).body
        code = [n for n in body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
        assert not code, f"{Path(init).relative_to(ROOT)}: code in a package's __init__.py"


# The stages that may read the test split: the final evaluations and the table made from them.
FINAL = {"score_references", "evaluate", "evaluate_base", "evaluate_policy", "report"}


def _reads_test(dep: str) -> bool:
    """Test tasks, or the directory that holds them, or episodes on them."""
    parts = dep.split("/")
    return dep.endswith("/tasks/test.parquet") or (len(parts) == 3 and parts[2] == "tasks") or "evaluations" in parts


def _test_data_upstream(spec, stages) -> list[str]:
    """Every dep that reads test data, of `spec` or of any stage whose outputs it reads, transitively."""
    found, seen, todo = [], set(), [spec]
    while todo:
        s = todo.pop()
        if s.name in seen:
            continue
        seen.add(s.name)
        found += [f"{s.name}: {d}" for d in s.deps if _reads_test(d)]
        todo += [
            p
            for p in stages
            for d in s.deps
            for o in p.outs
            if d == o or d.startswith(o + "/") or o.startswith(d + "/")
        ]
    return found


@pytest.mark.parametrize("spec", [s for s in STAGES if s.name.split("@")[0] not in FINAL], ids=lambda s: s.name)
def test_no_training_or_tuning_stage_reads_test_data(spec):
    assert _test_data_upstream(spec, STAGES) == []


def test_a_stage_that_reads_test_data_is_caught():
    policy = next(s for s in STAGES if s.name == "policy@backend-sweet")
    leaky = dataclasses.replace(policy, deps=tuple(d.replace("train.parquet", "test.parquet") for d in policy.deps))
    assert _test_data_upstream(leaky, STAGES) == ["policy@backend-sweet: data/backend/tasks/test.parquet"]
    # Upstream too: a policy trained on a critic that was trained on test episodes.
    critic = next(s for s in STAGES if s.name == "critic@backend-with_info")
    tainted = dataclasses.replace(critic, deps=(*critic.deps, "data/backend/evaluations/zero_shot"))
    others = [tainted if s.name == critic.name else s for s in STAGES]
    assert "critic@backend-with_info: data/backend/evaluations/zero_shot" in _test_data_upstream(policy, others)


def test_snakemake_sees_a_file_inside_another_stages_output_as_that_output():
    """DVC links `data/backend/tasks/train.parquet` to the stage that writes `data/backend/tasks`;
    Snakemake links only outputs named exactly."""
    produced = {out for s in STAGES for out in s.outs}
    demos = next(s for s in STAGES if s.name == "demos@backend")
    inputs = snakemake_inputs(demos, produced)
    assert "data/backend/tasks" in inputs and "data/backend/tasks/train.parquet" not in inputs


# --- every file that params name is a dependency of each stage that reads it ----------------------

# Path fields that name no data: a program the stage runs, and an asset whose bytes are pinned.
NOT_DATA_PATHS = {
    "chromium": "the renderer's executable: a tool, like Python itself",
    "tailwind_css": "tailwindcss@2.2.19, checked against its sha256 by scripts/setup.sh: its bytes never change",
}


def path_fields(model: type[BaseModel], prefix: str = "") -> Iterator[tuple[str, str, InputDir | None]]:
    """(key, field name, the InputDir it must lie under) for every field of the params tree that names a path."""
    for name, info in model.model_fields.items():
        key = f"{prefix}{name}"
        annotation = info.annotation
        options = get_args(annotation) if get_origin(annotation) in (Union, UnionType) else (annotation,)
        where = next((m for m in info.metadata if isinstance(m, InputDir)), None)
        for option in options:
            where = where or next((m for m in getattr(option, "__metadata__", ()) if isinstance(m, InputDir)), None)
            inner = get_args(option)[0] if get_origin(option) is Annotated else option
            if inner is Path or where is not None:
                yield key, name, where
                break
            if get_origin(option) is dict:
                option = get_args(option)[1]
            for sub in get_args(option) or (option,):
                sub = get_args(sub)[0] if get_origin(sub) is Annotated else sub
                if isinstance(sub, type) and issubclass(sub, BaseModel):
                    yield from path_fields(sub, f"{key}.*." if get_origin(info.annotation) is dict else f"{key}.")


def reads(stage_params: list[str], key: str) -> bool:
    """Whether a stage that declares these params sections reads the params key (`*` stands for any name)."""
    parts = key.split(".")
    for section in stage_params:
        head = section.split(".")
        if len(head) <= len(parts) and all(p in ("*", h) for h, p in zip(head, parts)):
            return True
    return False


def test_every_file_named_in_params_is_a_dependency_of_each_stage_that_reads_it():
    fields = list(path_fields(Params))
    undeclared = [key for key, name, where in fields if where is None and name not in NOT_DATA_PATHS]
    assert undeclared == [], "a params path with no InputDir: DVC would not see the file it names change"
    keys = {key for key, _, where in fields if where is not None}
    assert {
        "backend.tasks.colbench_test",
        "frontend.tasks.colbench_train",
        "backend.model.base",
        "rollout.import_file",
        "training.accelerate_config",
        "frontend.scoring.similarity.clip_checkpoint",
    } <= keys
    checked = 0
    for stage in load_stages(ROOT):
        declared = list(json.loads(stage.params))
        for key, _, where in fields:
            if where is not None and reads(declared, key):
                checked += 1
                assert any(where.path.is_relative_to(dep) for dep in stage.deps), (stage.name, key, str(where.path))
    assert checked > 10


def test_a_params_path_outside_its_directory_is_refused(tmp_path):
    text = (ROOT / "params.yaml").read_text().replace("colbench_test: null", "colbench_test: /data/test.jsonl", 1)
    (tmp_path / "params.yaml").write_text(text)
    with pytest.raises(ParamsError, match=r"backend\.tasks\.colbench_test: .*must lie under data/sources/"):
        load_params(tmp_path / "params.yaml")


def test_evaluate_refuses_an_agent_that_reads_a_checkpoint_it_does_not_depend_on(tmp_path):
    text = (ROOT / "params.yaml").read_text().replace("methods: [expert, no_ask]", "methods: [expert, served_base]")
    (tmp_path / "params.yaml").write_text(text)
    with pytest.raises(ParamsError, match="agent 'served_base' samples from a checkpoint"):
        load_params(tmp_path / "params.yaml")


def _domain_name_comparisons(tree: ast.AST) -> list[int]:
    """Lines that compare with a domain's name (`== "frontend"`, `"backend" in ...`, `match` cases)."""
    named = set(DOMAINS)
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(isinstance(s, ast.Constant) and s.value in named for s in sides):
                lines.append(node.lineno)
        elif isinstance(node, ast.MatchValue) and getattr(node.value, "value", None) in named:
            lines.append(node.lineno)
    return lines


def test_no_code_outside_the_domain_packages_branches_on_a_domain_name():
    """What differs between domains is asked of the domain (its `Domain`, `DomainReport` or params
    class), so that adding a domain touches no stage, report or learning code."""
    domain_packages = [ROOT / "sweetflow" / d for d in DOMAINS]
    files = sorted((ROOT / "sweetflow").rglob("*.py")) + sorted((ROOT / "stages").glob("*.py"))
    found = {
        path.relative_to(ROOT).as_posix(): lines
        for path in files
        if not any(path.is_relative_to(p) for p in domain_packages)
        and (lines := _domain_name_comparisons(ast.parse(path.read_text())))
    }
    assert found == {}


def test_a_branch_on_a_domain_name_is_caught():
    tree = ast.parse('if "frontend" in params.train_domains:\n    pass\nok = domain == name\n')
    assert _domain_name_comparisons(tree) == [1]
