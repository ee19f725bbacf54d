"""Every script under bench/ runs at its smallest size, so that none rots between the times someone
measures with it. Each runs as a user runs it (its own process, `python bench/NAME.py ...`), from a
copy of bench/ in a throw-away root that holds what the scripts read beside them: a params.yaml with
a small model, the backend's task and demonstration tables, a base checkpoint, and links to the
ColBench sample and the vendored Tailwind. Nothing is written into the repository."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sweetflow.core.artifacts import cpu
from tests.support.corpus import write_inputs
from tests.support.llm_server import build_tiny_checkpoint
from tests.support.project import ROOT, SAMPLE, tool_env

SMALL = {"vocab_size": 384, "hidden_size": 32, "layers": 1, "heads": 2, "max_length": 1536}

# Each script's smallest size, and the results file it writes (under the root's bench/results).
SMOKE = {
    "allocator": (["--rounds", "1", "--steps", "1", "--rows", "2", "--tokens", "2"], "allocator.json"),
    "dpo_throughput": (
        ["--pairs", "4", "--repeats", "1", "--modes", "ours", "trl", "--device", "cpu"],
        "dpo_throughput.json",
    ),
    "dvc_commands": (["--rounds", "1", "--commands", "status", "--project", "{repo}"], "dvc_commands.json"),
    "episodes_throughput": (
        ["--tasks", "1", "--turns", "1", "--tokens", "2", "--concurrency", "2"],
        "episodes_throughput.json",
    ),
    "fork_floor": (["--forks", "2", "--rounds", "1", "--rows", "{rows:backend}"], "fork_floor.json"),
    "free_phrasing": ([], "free_phrasing.json"),
    "generation_throughput": (
        ["--tasks", "2", "--samples", "1", "--batch-sizes", "32", "--threads", "1"],
        "generation_throughput.json",
    ),
    "hf_generate": (
        ["--checkpoint", "models/backend/base", "--batch-sizes", "2", "--tokens", "2", "--history", "0", "1"]
        + ["--rounds", "1", "--threads", "1", "--device", "auto"],
        "hf_generate.json",
    ),
    "kv_cache": (["--rows", "2", "--contexts", "16", "--steps", "2", "--vocab", "64"], "kv_cache.json"),
    "lora_vs_full": (
        ["--experiment", "{repo}/configs/experiments/smollm2.yaml", "--checkpoint", "models/backend/base"]
        + ["--examples", "2", "--holdout", "1", "--rounds", "1", "--threads", "1"],
        "lora_vs_full.json",
    ),
    "offline_import": (["--lines", "4"], "offline_import.json"),
    "agent_episodes": (
        ["--tasks", "1", "--samples", "1", "--turns", "2", "--tokens", "2", "--rounds", "1", "--batch-size", "2"],
        "agent_episodes-reuse_prefix.json",
    ),
    "render_throughput": (
        ["--repeat", "1", "--fresh-pages", "1", "--rows", "{rows:frontend}"],
        "render_throughput.json",
    ),
    "score_throughput": (["--repeat", "1", "--workers", "1", "--rows", "{rows:backend}"], "score_throughput.json"),
    "portable": (["--rounds", "1", "--steps", "1", "--threads", "1", "--rows", "2"], "portable.json"),
    "sandbox_throughput": (
        [
            "--tree",
            "{repo}",
            "--against",
            "{repo}",
            "--rounds",
            "1",
            "--repeat",
            "1",
            "--workers",
            "1",
            "--rows",
            "{rows:backend}",
        ],
        "sandbox_throughput.json",
    ),
    "stage_times": (["--before", "runs-before", "--after", "runs-after"], "stage_times.json"),
    "sft_throughput": (
        ["--examples", "4", "--threads", "1", "--precisions", "fp32", "--device", "cpu"],
        "sft_throughput.json",
    ),
    "simulator_matching": (["--no-embedding"], "simulator_matching.json"),
}


@pytest.fixture(scope="module")
def bench_root(corpus, tmp_path_factory) -> Path:
    root = write_inputs(tmp_path_factory.mktemp("bench"), corpus, SMALL)
    shutil.copytree(ROOT / "bench", root / "bench", ignore=shutil.ignore_patterns("results", "__pycache__"))
    for name in ("tests", "vendor"):
        (root / name).symlink_to(ROOT / name)
    build_tiny_checkpoint(root / "models/backend/base")
    for domain, sample in (("backend", "backend_test_first100.jsonl"), ("frontend", "frontend_test_first30.jsonl")):
        lines = (SAMPLE / sample).read_text().splitlines()
        (root / f"rows-{domain}.jsonl").write_text("\n".join(lines[:3]) + "\n")
    for side, seconds in (("before", 3.0), ("after", 2.0)):  # two stages' run records of a run of each side
        runs = root / f"runs-{side}" / "reports" / "runs"
        runs.mkdir(parents=True)
        for stage in ("tasks@backend", "report"):
            (runs / f"{stage}.json").write_text(json.dumps({"stage": stage, "wall_time_s": seconds}))
    return root


def test_every_bench_script_has_a_smoke_size():
    assert sorted(SMOKE) == sorted(p.stem for p in (ROOT / "bench").glob("*.py"))


@pytest.mark.parametrize("name", sorted(SMOKE))
def test_bench_script_runs_at_its_smallest_size(bench_root, name):
    args, result = SMOKE[name]
    args = [str(bench_root / f"rows-{a[6:-1]}.jsonl") if a.startswith("{rows:") else a for a in args]
    args = [a.replace("{repo}", str(ROOT)) for a in args]
    env = {**tool_env(), "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, f"bench/{name}.py", *args],
        cwd=bench_root,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, f"bench/{name}.py failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert "DISAGREE" not in done.stdout, done.stdout[-3000:]
    report = json.loads((bench_root / "bench" / "results" / result).read_text())
    if name != "stage_times":  # which compares the run records of other machines, each naming its own
        assert report["machine"]["cpu"] == cpu()["cpu"]  # the CPU's name, not "x86_64"


def test_the_gpu_checks_benchmark_and_summary_run_at_their_smallest_size_on_the_cpu(tmp_path):
    """bench/gpu_check/ is for a machine with a GPU (docs/gpu.md); here its benchmark runs on the CPU at
    the `tiny` shape, and its summary reads what it wrote, so that neither drifts from the code."""
    out = tmp_path / "gpu_check"
    out.mkdir()
    args = ["--device", "cpu", "--models", "tiny", "--pairs-per-step", "2", "--steps", "2", "--prompt", "16"]
    args += ["--response", "8", "--gen-batches", "1", "2", "--gen-prompt", "8", "--gen-tokens", "4", "--rounds", "1"]
    script = [sys.executable, "bench/gpu_check/bench_gpu.py", "--out", str(out / "bench.json"), *args]
    done = subprocess.run(
        [*script, "--precision", "fp32"], cwd=ROOT, env=tool_env(), capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (out / "steps.jsonl").write_text(json.dumps({"step": "bench", "rc": 0, "timed_out": False, "seconds": 9}) + "\n")
    summarized = subprocess.run(
        [sys.executable, "bench/gpu_check/summary.py", str(out)], cwd=ROOT, env=tool_env(), capture_output=True
    )
    summary = json.loads((out / "summary.json").read_text())
    assert summarized.returncode == 1  # the other steps did not run
    assert summary["verdicts"] == {"setup": "not run", "env": "not run", "bench": "pass", "tests": "not run"}
    assert summary["device"]["device"] == "cpu" and summary["bench_errors"] == [] == summary["bench_skipped"]
    training = summary["training"]["tiny"]
    assert training["ours"]["tokens_per_s"] > 0 and training["trl"]["tokens_per_s"] > 0 and training["ours_over_trl"]
    assert [row["batch"] for row in summary["generation"]["tiny"]] == [1, 2]
    assert all(row["same_tokens"] == 1.0 for row in summary["generation"]["tiny"])  # greedy: HF's tokens too
