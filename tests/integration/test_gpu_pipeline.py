"""The small project's trained chain on a CUDA GPU (`make test-gpu`; skipped where none is visible):
`dvc repro` through SWEET-RL's evaluation, every stage that loads a model putting it on the GPU
(params `device: auto`), as the manifests and run records say. The CPU's run of the same chain is the
reproduced project of test_pipeline.py."""

from __future__ import annotations

import pytest
import torch

from sweetflow.core.artifacts import read_manifest, read_run_record
from tests.support.project import SMALL_PARAMS, make_project, merge, run

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU is visible (make test-gpu runs it on one)"),
]


def test_the_chain_reaches_sweet_rls_evaluation_with_every_model_on_the_gpu(tmp_path):
    project = make_project(tmp_path / "project", merge(SMALL_PARAMS, {"train_domains": ["backend"]}))
    run(["dvc", "repro", "evaluate_policy@backend-sweet"], project, timeout=3600)
    for out, models in (
        ("models/backend/base", {"model"}),
        ("models/backend/critics/with_info", {"critic"}),
        ("data/backend/ranked/with_info", {"critic", "reference"}),
        ("models/backend/policies/sweet", {"policy"}),
    ):
        devices = read_manifest(project / out)["devices"]
        assert set(devices) == models and {d["device"] for d in devices.values()} == {"cuda"}, out
        stage = read_manifest(project / out)["stage"]
        assert read_run_record(stage, project)["machine"]["gpus"], stage
