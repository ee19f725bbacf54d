"""The trained chain under `dvc repro` (base model, rollouts, critic with training-time information,
candidates, ranking, step pairs, the SWEET-RL policy) on tiny checkpoints that carry the real chat
templates of stock instruct models: one that keeps the system message and reads a date (Llama 3.1),
one that refuses it (Gemma 2) and a reasoning model (Qwen3). Mistral v0.3's, which drops it from
training sequences, runs the chain in test_import_pipeline.py. One project for the three: the tasks,
demonstrations, rollouts (a scripted agent) and trajectory pairs do not depend on the model, so each
model after the first reruns only the stages that read it. Eight tasks, one seed."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.support.chat_templates import check_the_trained_chain_kept_the_template, stock_checkpoint
from tests.support.project import SMALL_PARAMS, make_project, merge, run

TARGET = "policy@backend-sweet"
RECORDS = {
    "llama-3.1-8b-instruct": {"system": "system message", "date": "2024-07-26"},
    "gemma-2-2b-it": {"system": "first user turn"},
    "qwen3-0.6b": {"system": "system message", "reasoning": "off (enable_thinking = false)"},
}


def smallest_chain(params: dict, base: str) -> None:
    """One critic (with training-time information) and the one policy that learns from it, one seed, eight
    training tasks of four samples each, pairs whose better side reaches 0.5, on the checkpoint `base`
    (sections replaced whole: a merge would keep the other critics and policies)."""
    params["critics"] = {"with_info": params["critics"]["with_info"]}
    params["policies"] = {"sweet": params["policies"]["sweet"]}
    params["seeds"] = [0]
    params["backend"]["tasks"].update(n_train=8, n_val=2, n_test=2)
    params["backend"]["model"].update(base=base, epochs=0)  # adopted as it is: no warm start
    params["rollout"]["samples_per_task"] = 4
    params["pairs"]["success_reward"] = 0.5  # the scripted agent rarely finishes a task in three turns
    params["candidates"].update(n=2, share=0.2)
    params["candidates"]["policy"]["max_new_tokens"] = 8


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("stock")
    return make_project(root / "project", merge(SMALL_PARAMS, {"train_domains": ["backend"]}))


@pytest.mark.parametrize("model", sorted(RECORDS))
def test_the_trained_chain_runs_on_a_stock_template(model, project: Path):
    base = f"models/external/{model}"  # where params allow a checkpoint made elsewhere: a dependency
    stock_checkpoint(project / base, model, max_length=3072)
    params = yaml.safe_load((project / "params.yaml").read_text())
    smallest_chain(params, base)
    (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    run(["git", "commit", "-qam", f"the smallest trained chain on {model}'s template"], project)
    run(["dvc", "repro", "--quiet", TARGET], project, timeout=600)

    check_the_trained_chain_kept_the_template(project, RECORDS[model], params["episodes"]["max_turns"])
