"""A stage reads its own entry of dvc.yaml (sweetflow.core.definition) without DVC's parser: for every
stage, the params keys, outputs, metrics and plots resolve exactly as DVC resolves them."""

from __future__ import annotations

import json

import pytest
import yaml

from sweetflow.core.definition import definition
from sweetflow.core.errors import InputError
from sweetflow.dag import load_stages
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
    assert mine.out == spec.outs[0] and mine.out.startswith(("data/", "models/", "reports/summary"))
    assert set(mine.outs) | {mine.metrics, mine.plots} - {None} == set(spec.outs)


def test_a_stage_dvc_yaml_lacks_or_a_value_params_lack_is_named(tmp_path):
    (tmp_path / "dvc.yaml").write_text("stages:\n  s:\n    cmd: x\n    params:\n      - agents.${rollout.agnt}\n")
    with pytest.raises(InputError, match=r"dvc.yaml: no stage 'critic'"):
        definition("critic", "backend", "with_info", VALUES, tmp_path)
    with pytest.raises(InputError, match=r"dvc.yaml: \$\{rollout.agnt\}: no such value"):
        definition("s", None, None, VALUES, tmp_path)
    (tmp_path / "dvc.yaml").write_text("stages: [\n")
    with pytest.raises(InputError, match=r"dvc.yaml: line 2"):
        definition("s", None, None, VALUES, tmp_path)
