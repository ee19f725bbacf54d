"""sweetflow/rollout/seeds.py: what the forkserver of an evaluation imports before it forks a process per seed, and
names the episodes each seed keeps for a rerun."""

from __future__ import annotations

import importlib.util
import json

from sweetflow.rollout.seeds import model_modules, seed_progress
from tests.support.params import project_params


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


def test_a_seeds_kept_episodes_are_named_by_what_decides_them_and_not_by_how_many_seeds_run_at_once(tmp_path):
    tasks = tmp_path / "test.parquet"
    tasks.write_text("tasks")
    checkpoints = {0: tmp_path / "seed0", 1: tmp_path / "seed1"}
    for directory in checkpoints.values():
        directory.mkdir()
        (directory / "config.json").write_text(str(directory))
    evaluate = project_params().evaluate

    def progress(processes: int = 0, seed: int = evaluate.seed):
        sections = {
            "evaluate.policy": evaluate.policy,
            "evaluate.seed": seed,
            "evaluate.processes": processes,
            "seeds": [0, 1],
        }
        return seed_progress("evaluate_policy@backend-sweet", sections, str(tasks), checkpoints)

    assert progress(processes=0) == progress(processes=1) == progress(processes=3)
    assert len(set(progress().values())) == 2  # one file a seed
    assert progress(seed=evaluate.seed + 1) != progress()  # another episode seed: other episodes
