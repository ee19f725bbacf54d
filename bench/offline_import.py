"""Benchmark: importing a large offline file (`rollout.source: import`), time and peak memory.

Writes a file in the shape of the official offline data (`colbench_code_offline_15k_llama8b.jsonl`):
N lines on the 100 real ColBench rows of tests/data, each a dialogue of 10 agent turns whose `input`
holds the prompt so far (as a model's input does: it grows with the dialogue). Each size is imported
in a process of its own, so that its peak resident memory is its own; bounded memory shows as a peak
that does not grow with N. `--sandbox` scores every answer again (the default `import_reward`);
otherwise the file's rewards are kept, which times the reading and writing alone. Prints a table and
writes bench/results/offline_import.json. Usage:
    python bench/offline_import.py [--lines 1500 15000] [--sandbox]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
ROWS = ROOT / "tests" / "data" / "colbench-sample" / "backend_test_first100.jsonl"
RESULTS = ROOT / "bench" / "results" / "offline_import.json"


def write_file(path: Path, n: int) -> None:
    from sweetflow.backend.tasks.colbench import read_backend_jsonl, to_official_row

    tasks = read_backend_jsonl(ROWS)
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            task = tasks[i % len(tasks)]
            history, prompt = [], task["problem_description"]
            for turn in range(10):
                message = f"Question {turn}: what should happen when the input is empty? " * 3
                history.append({"role": "assistant", "content": message, "input": prompt, "output": message})
                reply = "I don't know; return the default described above. " * 3
                history.append({"role": "user", "content": reply})
                prompt += "\n" + message + "\n" + reply
            history[-2]["content"] = "I WANT TO ANSWER: " + task["ground_truth"]
            history.pop()  # the dialogue ends with the answer
            row = {
                "task": to_official_row(task),
                "dialogue_history": history,
                "answer": task["ground_truth"],
                "reward": 1.0,
            }
            fh.write(json.dumps(row) + "\n")


def import_once(path: Path, sandbox: bool) -> dict:
    """In this process: import `path` on the sample's tasks; time and peak RSS."""
    from sweetflow.backend.sandbox.pool import Sandbox
    from sweetflow.backend.scoring import check_references
    from sweetflow.backend.tasks.colbench import read_backend_jsonl
    from sweetflow.params import load_params
    from sweetflow.rollout.offline import import_rollout

    params = load_params(ROOT / "params.yaml")
    rollout = params.rollout.model_copy(
        update={"source": "import", "import_reward": "sandbox" if sandbox else "file", "max_tasks": None}
    )
    params = params.model_copy(update={"rollout": rollout})
    tasks = read_backend_jsonl(ROWS)
    if sandbox:
        with Sandbox(params.backend.scoring) as pool:
            tasks = [{**t, "expected": c.expected} for t, c in zip(tasks, check_references(tasks, pool))]
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as out:
        metrics = import_rollout(path, tasks, [], "backend", params, Path(out) / "trajectories.parquet")
        size = (Path(out) / "trajectories.parquet").stat().st_size
    seconds = time.perf_counter() - start
    return {
        "lines": metrics["count"],
        "seconds": round(seconds, 2),
        "lines_per_s": round(metrics["count"] / seconds, 1),
        "parquet_mb": round(size / 2**20, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def main() -> None:
    from sweetflow.core.artifacts import machine

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, nargs="+", default=[1500, 15000])
    parser.add_argument("--sandbox", action="store_true", help="score every answer again (import_reward: sandbox)")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(import_once(args.child, args.sandbox)))
        return
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.lines:
            path = Path(tmp) / f"offline-{n}.jsonl"
            write_file(path, n)
            cmd = [sys.executable, __file__, "--child", str(path)] + (["--sandbox"] if args.sandbox else [])
            child = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=ROOT)
            results.append(
                {"file_mb": round(path.stat().st_size / 2**20, 1), **json.loads(child.stdout.splitlines()[-1])}
            )
    table = Table(
        "lines",
        "file (MB)",
        "parquet (MB)",
        "seconds",
        "lines/s",
        "peak RSS (MB)",
        title=f"offline import ({'rescored in the sandbox' if args.sandbox else 'file rewards kept'})",
    )
    for r in results:
        table.add_row(*(str(r[k]) for k in ("lines", "file_mb", "parquet_mb", "seconds", "lines_per_s", "peak_rss_mb")))
    Console().print(table)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"machine": machine(), "sandbox": args.sandbox, "results": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()
