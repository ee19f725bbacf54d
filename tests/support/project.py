"""Throw-away copies of the project in which real DVC and Snakemake runs happen, and how tests run our tools."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "tests" / "data" / "colbench-sample"  # real ColBench rows; see its README
# Besides the code: the directories that files named in params must lie in (sweetflow.core.params.InputDir).
PROJECT_FILES = (
    "dvc.yaml",
    "params.yaml",
    "Snakefile",
    "pyproject.toml",
    ".dvcignore",
    "stages",
    "sweetflow",
    "workflow",
    "data/offline",
    "data/sources",
    "models/external",
    "models/clip",
    "configs/accelerate",
)
TAILWIND = ROOT / "vendor/tailwindcss-2.2.19/tailwind.min.css"  # scripts/setup.sh fetches it
# A model small enough to train and sample in seconds; the pipeline's wiring is what is tested.
# The context holds a whole dialogue with the critic's reference at this small vocabulary.
SMALL_MODEL = {"vocab_size": 300, "hidden_size": 32, "heads": 2, "epochs": 1, "max_length": 3072}
# Small enough that a whole `dvc repro` of both domains, each through the trained chain, takes minutes.
# Every test and validation task is evaluated once per seed and method: the fewest that the tests'
# checks still mean something on (24 training tasks give the backend's critic its one trajectory pair;
# of the first 8 test tasks, the expert solves one within three turns, which the run's site shows).
SMALL_PARAMS = {
    "train_domains": ["backend", "frontend"],
    "backend": {
        "tasks": {"n_train": 24, "n_test": 8, "n_val": 2, "seed": 3},
        "scoring": {"workers": 2},
        "model": SMALL_MODEL,
    },
    "frontend": {
        # Each page is rendered by a Chromium renderer of its own: the frontend is most of the project's time.
        "tasks": {"n_train": 4, "n_test": 2, "n_val": 1, "seed": 3},
        "scoring": {"render": {"tailwind_css": str(TAILWIND)}},
        # Pages are long: a larger vocabulary keeps a dialogue of three of them within the context.
        "model": {**SMALL_MODEL, "vocab_size": 2048, "max_length": 4096},
    },
    # One thread per stage: the suite runs on two workers.
    "training": {"threads": 1},
    # Two processes: the seeds of a checkpoint evaluation run in processes forked from a forkserver, as by default.
    "evaluate": {"policy": {"max_new_tokens": 32}, "processes": 2},
    # An untrained model rarely answers: short episodes keep its evaluations to seconds.
    "episodes": {"max_failure_share": 1.0, "max_turns": 3},
    # An untrained model never succeeds, so the offline data comes from a scripted agent that sometimes does.
    "rollout": {"agent": "half_expert", "samples_per_task": 2},
    # Three turns leave the scripted designer's samples of a task close together.
    "pairs": {"min_gap": 0.01},
    "critics": {"with_info": {"epochs": 1, "warmup_epochs": 1, "warmup_min_reward": 0.0}, "no_info": {"epochs": 1}},
    "candidates": {"share": 0.1, "n": 4, "policy": {"max_new_tokens": 32, "threads": 1}},
    "critic_check": {"states": 3, "rollouts": 1},
    "policies": {
        "rft": {"epochs": 1, "min_reward": {"backend": 1.0, "frontend": 0.2}},
        "mtdpo": {"epochs": 1},
        "sweet": {"epochs": 1},
        # The official actor's NLL (whole dialogue, per-sequence mean) runs through the stage here.
        "sweet_no_info": {"epochs": 1, "nll_coef": 0.01, "nll_span": "dialogue", "nll_mean": "sequence"},
    },
    "seeds": [0, 1],
}


def tool_env() -> dict:
    """The environment for running our tools as subprocesses as a user runs them: the venv's
    `python` and `dvc` first, and Python writing bytecode (these machines turn it off; users don't,
    and __pycache__ beside the code must change no stage's status)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.setdefault("GIT_AUTHOR_NAME", "sweetflow-tests")
    env.setdefault("GIT_AUTHOR_EMAIL", "tests@localhost")
    env.setdefault("GIT_COMMITTER_NAME", "sweetflow-tests")
    env.setdefault("GIT_COMMITTER_EMAIL", "tests@localhost")
    return env


def run(
    cmd: list[str], cwd: Path, check: bool = True, timeout: float = 600, env: dict | None = None
) -> subprocess.CompletedProcess:
    """`cmd` run in `cwd` as a user runs it (`tool_env`, with `env` added)."""
    result = subprocess.run(cmd, cwd=cwd, env=tool_env() | (env or {}), capture_output=True, text=True, timeout=timeout)
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    return result


def dvc_status(project: Path, *args: str) -> dict:
    """`dvc status --json` of `project` with `args` (targets, options): {} when nothing is stale."""
    return json.loads(run(["dvc", "status", "--json", *args], project).stdout)


def make_project(dest: Path, params: dict | None = None) -> Path:
    """A fresh git + DVC repository holding the project's pipeline, with `params` merged in."""
    dest.mkdir(parents=True, exist_ok=True)
    # GGUF files that `sweetflow external` linked into models/external/ stay out: a test links its own.
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.gguf")
    for name in PROJECT_FILES:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=ignore)
        elif src.exists():
            shutil.copy2(src, dest / name)
    (dest / ".dvc").mkdir()
    for name in ("config", ".gitignore"):
        shutil.copy2(ROOT / ".dvc" / name, dest / ".dvc" / name)
    merged = merge(yaml.safe_load((ROOT / "params.yaml").read_text()) or {}, params or {})
    (dest / "params.yaml").write_text(yaml.safe_dump(merged, sort_keys=False))
    (dest / ".gitignore").write_text(".snakemake/\nlogs/\n__pycache__/\n")
    run(["git", "init", "-q", "-b", "main"], dest)
    run(["git", "add", "-A"], dest)
    run(["git", "commit", "-q", "-m", "project"], dest)
    return dest


def merge(base: dict, changes: dict) -> dict:
    """`base` with `changes` applied, nested sections merged key by key (lists and values replaced)."""
    out = dict(base)
    for key, value in changes.items():
        out[key] = merge(out.get(key) or {}, value) if isinstance(value, dict) else value
    return out
