"""stages/_episodes.py: what the forkserver of an evaluation imports before it forks a process per seed."""

from __future__ import annotations

import importlib.util
import json

from stages._episodes import model_modules


def test_the_forkserver_imports_the_modules_of_each_checkpoints_model_type(tmp_path):
    for name, model_type in (("base", "llama"), ("seed0", "llama"), ("other", "qwen2")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps({"model_type": model_type}))
    modules = model_modules([tmp_path / "base", tmp_path / "seed0", tmp_path / "other"])
    assert modules == [
        "transformers.models.llama.configuration_llama",
        "transformers.models.llama.modeling_llama",
        "transformers.models.qwen2.configuration_qwen2",
        "transformers.models.qwen2.modeling_qwen2",
    ]
    assert all(importlib.util.find_spec(m) is not None for m in modules)
