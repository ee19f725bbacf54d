"""The trained chain on a checkpoint whose chat template has no `{% generation %}` blocks, as stock
instruct models ship (Llama 3.1's format here): every training stage finds the agent's turns itself."""

from __future__ import annotations

import json
from pathlib import Path

from safetensors.torch import load_file

from sweetflow.models.checkpoint import load_checkpoint
from tests.support.chat_templates import stock_checkpoint
from tests.support.project import SMALL_PARAMS, make_project, merge, run


def test_the_backend_chain_trains_every_method_on_a_stock_template_checkpoint(tmp_path: Path):
    base = stock_checkpoint(tmp_path / "llama3-style", "llama3")
    params = merge(SMALL_PARAMS, {"train_domains": ["backend"], "backend": {"model": {"base": str(base)}}})
    project = make_project(tmp_path / "project", params)
    targets = [f"evaluate_policy@backend-{name}" for name in ("rft", "mtdpo", "sweet", "sweet_no_info")]
    run(["dvc", "repro", "--quiet", *targets, "critic_quality@backend-with_info"], project, timeout=1800)

    _, tokenizer = load_checkpoint(project / "models/backend/base")
    assert "generation" not in tokenizer.chat_template  # the stock template, adopted as it is
    base_weights = load_file(project / "models/backend/base/model.safetensors")
    for critic in ("with_info", "no_info"):
        metrics = json.loads((project / f"reports/backend/stages/critics/{critic}/metrics.json").read_text())
        assert metrics["train_pairs"] > 0 and metrics["train_tokens"] > 0, metrics
    for name in ("rft", "mtdpo", "sweet", "sweet_no_info"):
        trained = load_file(project / f"models/backend/policies/{name}/seed0/model.safetensors")
        # Trained on scored tokens: with an empty mask, the loss would be zero and nothing would move.
        assert any(not trained[k].equal(base_weights[k]) for k in base_weights), name
        metrics = json.loads((project / f"reports/backend/{name}/metrics.json").read_text())
        assert metrics["count"] > 0, (name, metrics)
