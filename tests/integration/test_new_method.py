"""A training method added as one folder (sweetflow/rl/methods/<method>/: its params class and what it
trains on) and a params.yaml entry: the policy it trains goes through every stage that reads policies
(its training, validation and evaluation, the report) and `sweetflow params`, with no other change
to the project, and no critic reruns (docs/architecture.md, Training methods: one folder each)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from sweetflow.core.artifacts import read_manifest
from tests.support.project import dvc_status, run
from tests.support.reproduced import copy_of

# A throwaway method: SFT on the first `dialogues` usable trajectories, whatever their reward.
PARAMS = '''
from typing import ClassVar, Literal

from pydantic import Field

from sweetflow.core.params import PolicyParams


class Params(PolicyParams):
    """SFT on the first trajectories, whatever their reward."""

    method: Literal["imitate_all"] = Field(description="This method.")
    reads_preference: ClassVar[bool] = False
    dialogues: int = Field(ge=1, description="The first usable trajectories imitated.")
'''
TRAINING = """
from sweetflow.rl.methods.imitate_all.params import Params
from sweetflow.rl.policy_methods import SftTraining, Source
from sweetflow.rl.sequences import successful_chats
from sweetflow.rl.sft import encode_chats


def training_data(p: Params, source: Source) -> SftTraining:
    chats = successful_chats(source.tasks, source.trajectories, float("-inf"))
    examples, cut = encode_chats(source.tokenizer, chats[: p.dialogues], source.max_length)
    return SftTraining([], {"train_dialogues": len(examples), "dialogues_cut": cut}, examples)
"""
NAME = "imitate_all"


def stages_of(kind: str, project: Path) -> list[str]:
    names = run(["dvc", "stage", "list", "--name-only"], project).stdout.split()
    return [n for n in names if n.split("@")[0] == kind]


def status(project: Path) -> list[str]:
    return run(["git", "status", "--porcelain", "--untracked-files=normal"], project).stdout.splitlines()


def test_a_method_added_as_a_folder_runs_through_every_stage_that_reads_policies(repro_project: Path, tmp_path: Path):
    project = copy_of(repro_project, tmp_path / "project")
    before = set(status(project))
    folder = project / "sweetflow/rl/methods" / NAME
    folder.mkdir()
    (folder / "__init__.py").write_text('"""Imitate every trajectory."""\n')
    (folder / "params.py").write_text(PARAMS)
    (folder / "training.py").write_text(TRAINING)
    params = yaml.safe_load((project / "params.yaml").read_text())
    entry = {**params["policies"]["rft"], "method": NAME, "dialogues": 3}
    params["policies"][NAME] = entry
    (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))

    changed = set(status(project)) - before
    assert sorted(changed) == [" M params.yaml", f"?? sweetflow/rl/methods/{NAME}/"]  # two places, as the docs say

    critics = stages_of("critic", project)
    assert critics and dvc_status(project, *critics) == {}

    # The new policy and every stage downstream of it; the other policies are left alone (they are stale:
    # they depend on the whole of sweetflow/rl, as DVC cannot name a dependency by a policy's method).
    domains = params["train_domains"]
    out = run(["dvc", "repro", "--downstream", *(f"policy@{d}-{NAME}" for d in domains)], project).stdout
    ran = set(re.findall(r"Running stage '([^']+)'", out))
    reading = {f"{kind}@{d}-{NAME}" for kind in ("policy", "validate", "evaluate_policy") for d in domains}
    assert reading <= ran and "report" in ran, ran
    assert not any(NAME not in stage and stage != "report" for stage in ran), ran

    policy = project / "models/backend/policies" / NAME
    seeds = params["seeds"]
    assert all((policy / f"seed{seed}/model.safetensors").is_file() for seed in seeds)
    assert not (policy / "reference_logps.pt").exists()  # an SFT method keeps nothing beside its checkpoints
    metrics = json.loads((project / f"reports/backend/stages/policies/{NAME}/metrics.json").read_text())
    assert metrics["method"] == NAME and metrics["data"]["train_dialogues"] == 3
    assert sorted(metrics["seeds"]) == [str(s) for s in seeds]
    # The manifest records the entry as the method's own class reads it, its own knob included.
    assert read_manifest(policy)["params"][f"policies.{NAME}"] == entry
    assert NAME in (project / "reports/results.md").read_text()
    assert (project / f"data/backend/validation/{NAME}/manifest.json").is_file()

    # The project's own code (python -c runs from it), as the stages run it; a wide table keeps each key whole.
    show = "import sys; from sweetflow.cli import main; sys.exit(main(['params']))"
    shown = run(["python", "-c", show], project, env={"COLUMNS": "300"}).stdout
    assert f"policies.{NAME}.dialogues" in shown and "The first usable trajectories imitated." in shown
    assert dvc_status(project, *critics) == {}
