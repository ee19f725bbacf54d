"""A stage reads its own entry of dvc.yaml (sweetflow.core.definition) without DVC's parser: for every
stage, the params keys, deps, outputs, metrics and plots resolve exactly as DVC resolves them; and it
finds another stage's output there, by that stage's name, only where its own entry declares it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from sweetflow.core.definition import definition, output_of, outputs_of
from sweetflow.core.errors import InputError
from sweetflow.core.tables import CANDIDATES, PAIRS, task_file
from sweetflow.dag import load_stages
from sweetflow.params import load_params
from sweetflow.stage import Stage
from tests.support.project import ROOT

STAGES = load_stages(ROOT)
VALUES = yaml.safe_load((ROOT / "params.yaml").read_text())


@pytest.mark.parametrize("spec", STAGES, ids=lambda s: s.name)
def test_a_stage_reads_its_definition_as_dvc_resolves_it(spec):
    words = spec.cmd.split()
    kind = spec.module.removeprefix("stages.")
    item = words[4] if len(words) > 4 else None
    mine = definition(kind, spec.domain, item, VALUES, ROOT)
    assert set(mine.params) == set(json.loads(spec.params))
    assert mine.deps == spec.deps
    assert mine.out == spec.outs[0] and mine.out.startswith(("data/", "models/", "reports/summary"))
    assert set(mine.outs) | {mine.metrics, mine.plots} - {None} == set(spec.outs)


def _stage(kind, domain, item):
    params = load_params(ROOT / "params.yaml")
    return Stage(kind, domain, item, params, definition(kind, domain, item, VALUES, ROOT))


def test_a_stage_finds_an_upstream_output_by_its_producers_name(monkeypatch):
    monkeypatch.chdir(ROOT)
    policy = _stage("policy", "frontend", "sweet")
    critic = VALUES["policies"]["sweet"]["critic"]
    assert policy.upstream("step_pairs", critic, file=PAIRS) == f"data/frontend/step_pairs/{critic}/pairs.parquet"
    assert policy.upstream("base_model") == "models/frontend/base"
    assert policy.upstream("tasks", file=task_file("train")) == "data/frontend/tasks/train.parquet"
    report = _stage("report", None, None)
    assert (
        report.upstream("candidates", domain="backend", file=CANDIDATES) == "data/backend/candidates/candidates.parquet"
    )


def test_an_output_the_entry_does_not_declare_is_named(monkeypatch):
    """Reading what dvc.yaml does not list would let DVC skip the stage when that data changes."""
    monkeypatch.chdir(ROOT)
    policy = _stage("policy", "backend", "sweet")
    with pytest.raises(InputError, match=r"stage 'policy@backend-sweet' reads data/backend/tasks/test.parquet: add"):
        policy.upstream("tasks", file=task_file("test"))
    with pytest.raises(InputError, match=r"reads data/backend/critic_check/with_info"):
        policy.upstream("critic_check", "with_info")


def test_code_outside_a_stage_finds_outputs_by_their_producers_name(tmp_path, monkeypatch):
    """The report and tuning read outputs as stages do, without params.yaml (rollout's params need it)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "dvc.yaml").write_text((ROOT / "dvc.yaml").read_text())
    assert output_of("rollout", "backend").as_posix() == "data/backend/rollout"
    assert output_of("rank", "frontend", "with_info", CANDIDATES).as_posix() == (
        "data/frontend/ranked/with_info/candidates.parquet"
    )
    assert definition("rollout", "backend", None).params is None
    for critic in ("b", "a"):
        (tmp_path / "data/backend/ranked" / critic).mkdir(parents=True)
    (tmp_path / "data/backend/ranked/notes.txt").write_text("not an output")
    (tmp_path / "data/frontend/ranked/c").mkdir(parents=True)
    assert outputs_of("rank", "backend") == {"a": Path("data/backend/ranked/a"), "b": Path("data/backend/ranked/b")}
    assert list(outputs_of("rank", "frontend")) == ["c"]
    assert outputs_of("rollout", "backend") == {}
    (tmp_path / "data/backend/rollout").mkdir(parents=True)
    assert outputs_of("rollout", "backend") == {"rollout": Path("data/backend/rollout")}
    (tmp_path / "reports/backend/stages/critic_quality/a").mkdir(parents=True)
    assert outputs_of("critic_quality", "backend", "metrics") == {}  # a directory without its metrics file
    (tmp_path / "reports/backend/stages/critic_quality/a/metrics.json").write_text("{}")
    assert outputs_of("critic_quality", "backend", "metrics") == {
        "a": Path("reports/backend/stages/critic_quality/a/metrics.json")
    }
    assert outputs_of("critic_quality", "frontend", "metrics") == {}
    (tmp_path / "reports/backend/zero_shot").mkdir(parents=True)
    (tmp_path / "reports/backend/zero_shot/metrics.json").write_text("{}")
    assert outputs_of("evaluate_base", "backend", "metrics") == {
        "zero_shot": Path("reports/backend/zero_shot/metrics.json")
    }
    (tmp_path / "reports/backend/stages/policies/rft/plots").mkdir(parents=True)
    assert outputs_of("policy", "backend", "plots") == {"rft": Path("reports/backend/stages/policies/rft/plots")}
    with pytest.raises(InputError, match="stage 'rollout' declares no plots"):
        outputs_of("rollout", "backend", "plots")


def test_a_stage_dvc_yaml_lacks_or_a_value_params_lack_is_named(tmp_path):
    (tmp_path / "dvc.yaml").write_text("stages:\n  s:\n    cmd: x\n    params:\n      - agents.${rollout.agnt}\n")
    with pytest.raises(InputError, match=r"dvc.yaml: no stage 'critic'"):
        definition("critic", "backend", "with_info", VALUES, tmp_path)
    with pytest.raises(InputError, match=r"dvc.yaml: \$\{rollout.agnt\}: no such value"):
        definition("s", None, None, VALUES, tmp_path)
    (tmp_path / "dvc.yaml").write_text("stages: [\n")
    with pytest.raises(InputError, match=r"dvc.yaml: line 2"):
        definition("s", None, None, VALUES, tmp_path)
