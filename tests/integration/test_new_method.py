"""A training method added in one module (sweetflow/rl/methods/<method>.py, its params class beside
its training data) and a params.yaml entry: stage `policy` trains it on a copy of the reproduced
project, with no change to the stage (docs/architecture.md, Training methods: one module each)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from sweetflow.core.artifacts import read_manifest
from tests.support.project import run
from tests.support.reproduced import copy_of

# A throwaway method: SFT on the first `dialogues` usable trajectories, whatever their reward.
METHOD = '''
from typing import ClassVar, Literal

from pydantic import Field

from sweetflow.core.params import PolicyParams
from sweetflow.rl.policy_methods import SftTraining, Source
from sweetflow.rl.sequences import successful_chats
from sweetflow.rl.sft import encode_chats


class ImitateAllParams(PolicyParams):
    """SFT on the first trajectories, whatever their reward."""

    method: Literal["imitate_all"] = Field(description="This method.")
    reads_preference: ClassVar[bool] = False
    dialogues: int = Field(ge=1, description="The first usable trajectories imitated.")


def training_data(p: ImitateAllParams, source: Source) -> SftTraining:
    chats = successful_chats(source.tasks, source.trajectories, float("-inf"))
    examples, cut = encode_chats(source.tokenizer, chats[: p.dialogues], source.max_length)
    return SftTraining([], {"train_dialogues": len(examples), "dialogues_cut": cut}, examples)
'''
STAGE = "policy@backend-imitate_all"


def test_a_method_added_in_one_module_trains_through_the_policy_stage(repro_project: Path, tmp_path: Path):
    project = copy_of(repro_project, tmp_path / "project")
    (project / "sweetflow/rl/methods/imitate_all.py").write_text(METHOD)
    params = yaml.safe_load((project / "params.yaml").read_text())
    entry = {**params["policies"]["rft"], "method": "imitate_all", "dialogues": 3}
    params["policies"]["imitate_all"] = entry
    (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))

    # --single-item: the new module changes sweetflow/rl, a dependency of the stages upstream too.
    out = run(["dvc", "repro", "--single-item", STAGE], project).stdout
    assert re.findall(r"Running stage '([^']+)'", out) == [STAGE]

    policy = project / "models/backend/policies/imitate_all"
    seeds = params["seeds"]
    assert all((policy / f"seed{seed}/model.safetensors").is_file() for seed in seeds)
    assert not (policy / "reference_logps.pt").exists()  # an SFT method keeps nothing beside its checkpoints
    metrics = json.loads((project / "reports/backend/stages/policies/imitate_all/metrics.json").read_text())
    assert metrics["method"] == "imitate_all"
    assert metrics["data"]["train_dialogues"] == 3
    assert sorted(metrics["seeds"]) == [str(s) for s in seeds]
    # The manifest records the entry as the method's own class reads it, its own knob included.
    assert read_manifest(policy)["params"]["policies.imitate_all"] == {**entry, "dialogues": 3}
