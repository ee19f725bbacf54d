"""A few real tasks, scripted demonstrations on them, and one run of the `base_model` stage on those
(a small tiny model, a few SFT steps), shared by the whole session."""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from sweetflow.backend.agents import ScriptedExpert
from sweetflow.backend.domain import sandbox_runtime
from sweetflow.backend.sandbox.pool import Sandbox
from sweetflow.backend.scoring import check_references
from sweetflow.backend.simulators import ScriptedHuman
from sweetflow.backend.tasks.procedural import generate_tasks
from sweetflow.backend.tasks.table import CHECKED_SCHEMA
from sweetflow.backend.tasks.table import to_frame as tasks_frame
from sweetflow.core.tables import to_frame as trajectories_frame
from sweetflow.rollout.engine import Checkpoint, run_episodes
from tests.support.params import episode_params, sandbox_params
from tests.support.project import ROOT, merge, run

# Small enough for seconds of training; max_length fits a whole dialogue at this vocabulary size.
TINY = {
    "vocab_size": 384,
    "hidden_size": 64,
    "layers": 2,
    "heads": 4,
    "max_length": 1536,
    "epochs": 2,
    "batch_size": 4,
    "learning_rate": 0.005,
}


@dataclass
class Corpus:
    train: list[dict]  # checked task rows, as data/backend/tasks/train.parquet holds them
    test: list[dict]
    demos: list[dict]  # trajectory records, as data/backend/demos/trajectories.parquet holds them


@pytest.fixture(scope="session")
def sandbox():
    with Sandbox(sandbox_params(workers=1)) as sb:
        yield sb


@pytest.fixture(scope="session")
def corpus(sandbox, tmp_path_factory) -> Corpus:
    train, test = generate_tasks(8, 4, seed=5)
    checked = {}
    for split, tasks in (("train", train), ("test", test)):
        checks = check_references(tasks, sandbox)
        checked[split] = [
            {**t, "split": split, "expected": c.expected, "reference_passes": c.reference_passes, "flags": c.flags}
            for t, c in zip(tasks, checks)
        ]
    demos = run_episodes(
        checked["train"],
        2,
        ScriptedExpert(0.8),
        sandbox_runtime(ScriptedHuman(), sandbox),
        episode_params(),
        0,
        Checkpoint(tmp_path_factory.mktemp("demos") / "c.jsonl"),
    )
    return Corpus(checked["train"], checked["test"], demos)


def write_inputs(root: Path, corpus: Corpus, model: dict) -> Path:
    """A working directory with the stage's inputs and a params.yaml whose `backend.model` section is `model`."""
    (root / "data/backend/tasks").mkdir(parents=True)
    (root / "data/backend/demos").mkdir(parents=True)
    tasks_frame(corpus.train, CHECKED_SCHEMA).write_parquet(root / "data/backend/tasks/train.parquet")
    trajectories_frame(corpus.demos).write_parquet(root / "data/backend/demos/trajectories.parquet")
    params = merge(
        yaml.safe_load((ROOT / "params.yaml").read_text()), {"backend": {"model": model}, "training": {"threads": 1}}
    )
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    shutil.copy(ROOT / "dvc.yaml", root / "dvc.yaml")  # the stage's definition: its params sections and output
    return root


@pytest.fixture(scope="session")
def stage_dir(corpus, tmp_path_factory) -> Path:
    """A directory in which `python -m stages.base_model` has built the tiny base policy."""
    root = write_inputs(tmp_path_factory.mktemp("stage"), corpus, TINY)
    run([sys.executable, "-m", "stages.base_model", "backend"], root, timeout=300)
    return root


@pytest.fixture(scope="session")
def checkpoint(stage_dir) -> Path:
    return stage_dir / "models/backend/base"
