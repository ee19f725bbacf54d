"""The `base_model` stage: the tiny policy it builds, a local checkpoint it adopts, a hub id it refuses."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from safetensors import safe_open

from stages import base_model
from sweetflow.core.artifacts import content_hash, read_manifest
from sweetflow.core.errors import InputError
from tests.support.corpus import TINY, write_inputs
from tests.support.project import tool_env


def test_tiny_stage_writes_a_checkpoint_with_its_config_and_dvclive_report(stage_dir, checkpoint):
    files = {p.name for p in checkpoint.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", "manifest.json", "training_config.json"} <= files
    config = json.loads((checkpoint / "training_config.json").read_text())
    assert config["model"] == {**config["model"], **TINY}
    assert config["data"]["train_dialogues"] == 16 and config["data"]["train_dialogues_cut"] == 0
    manifest = read_manifest(checkpoint)
    assert manifest["stage"] == "base_model@backend" and set(manifest["inputs"]) == {
        "data/backend/tasks/train.parquet",
        "data/backend/demos/trajectories.parquet",
    }
    report = stage_dir / "reports/backend/stages/base_model"
    metrics = json.loads((report / "metrics.json").read_text())
    assert metrics["steps"] == 8 and metrics["data"] == config["data"]
    loss = (report / "plots/metrics/train/loss.tsv").read_text().splitlines()
    assert loss[0] == "step\tloss" and len(loss) == 2
    assert not list(stage_dir.glob("**/.*tmp-*"))  # no temporary leftovers


def test_checkpoint_loads_and_generates_offline(checkpoint, tmp_path):
    code = (
        "import sys\n"
        "from sweetflow.dialogue import EpisodeView\n"
        "from sweetflow.agents.transformers import TransformersAgent\n"
        "from sweetflow.core.params import TransformersAgentParams\n"
        "agent = TransformersAgent(TransformersAgentParams(backend='transformers', checkpoint=sys.argv[1], batch_size=4, threads=1, temperature=1.0, top_p=1.0, max_new_tokens=5, reuse_prefix=False, dtype='auto'))\n"  # noqa: E501
        "[turn] = agent.act([EpisodeView('t', 'Write a function.', [], seed=0, max_turns=10)])\n"
        "print(turn.n_tokens >= 1)\n"
    )
    env = {**tool_env(), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
    result = subprocess.run([sys.executable, "-c", code, str(checkpoint)], env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True"


def test_local_checkpoint_is_adopted_as_is(corpus, checkpoint, tmp_path, monkeypatch):
    base = "models/external/tiny-chat"  # where params.yaml allows a checkpoint made elsewhere: a dependency
    monkeypatch.chdir(write_inputs(tmp_path, corpus, {"base": base, "epochs": 0}))  # 0: no warm start
    (tmp_path / "models/external").mkdir(parents=True)
    (tmp_path / base).symlink_to(checkpoint)  # linked there, as the README says a large checkpoint may be
    monkeypatch.setattr(sys, "argv", ["base_model", "backend"])
    base_model.main()
    adopted = tmp_path / "models/backend/base"
    for name in ("config.json", "model.safetensors", "tokenizer.json"):
        assert os.path.samefile(adopted / name, checkpoint / name)  # hard-linked: big weights are not copied
    assert read_manifest(adopted)["inputs"] == {base: content_hash(checkpoint)}
    assert read_manifest(checkpoint)["stage"] == "base_model@backend"  # the source's own manifest is untouched
    metrics = json.loads((tmp_path / "reports/backend/stages/base_model/metrics.json").read_text())
    assert metrics == {"base": base, "files": "hardlink", "trained": False}


def test_local_checkpoint_is_warm_started_on_the_demonstrations(corpus, checkpoint, tmp_path, monkeypatch):
    base = "models/external/tiny-chat"
    monkeypatch.chdir(
        write_inputs(tmp_path, corpus, {"base": base, "epochs": 1, "learning_rate": 0.01, "batch_size": 4})
    )
    (tmp_path / "models/external").mkdir(parents=True)
    (tmp_path / base).symlink_to(checkpoint)
    monkeypatch.setattr(sys, "argv", ["base_model", "backend"])
    base_model.main()
    started = tmp_path / "models/backend/base"
    assert not os.path.samefile(started / "model.safetensors", checkpoint / "model.safetensors")
    with (
        safe_open(started / "model.safetensors", "pt") as new,
        safe_open(checkpoint / "model.safetensors", "pt") as old,
    ):
        assert set(new.keys()) == set(old.keys())
        assert any(not new.get_tensor(k).equal(old.get_tensor(k)) for k in new.keys())  # trained: the weights moved
    assert (started / "tokenizer.json").read_bytes() == (checkpoint / "tokenizer.json").read_bytes()
    manifest = read_manifest(started)
    assert set(manifest["inputs"]) == {
        "data/backend/tasks/train.parquet",
        "data/backend/demos/trajectories.parquet",
        base,
    }  # lineage reaches the checkpoint it started from, and the demonstrations it learnt
    assert manifest["inputs"][base] == content_hash(checkpoint)
    assert manifest["chat_template"] == {"system": "system message"}  # the tiny template, adopted as it is
    config = json.loads((started / "training_config.json").read_text())
    assert config["data"]["train_dialogues"] == 16 and config["sft"]["steps"] == 4
    metrics = json.loads((tmp_path / "reports/backend/stages/base_model/metrics.json").read_text())
    assert metrics["steps"] == 4 and metrics["data"] == config["data"]


def test_hub_id_is_refused_and_a_missing_directory_is_an_input_error(corpus, tmp_path, monkeypatch):
    hub_id = "meta-llama/Llama-3.1-8B-Instruct"
    monkeypatch.chdir(write_inputs(tmp_path, corpus, {"base": hub_id}))
    monkeypatch.setattr(sys, "argv", ["base_model", "backend"])
    with pytest.raises(InputError, match="backend.model.base: .*must lie under models/external/"):
        base_model.main()
    missing = "models/external/Llama-3.1-8B-Instruct"
    monkeypatch.chdir(write_inputs(tmp_path / "missing", corpus, {"base": missing}))
    neither = f"model.base: '{missing}' is neither 'tiny' nor a local directory or .gguf file"
    with pytest.raises(InputError, match=neither):
        base_model.main()
    assert not (tmp_path / "models").exists() and not (tmp_path / "missing/models").exists()
