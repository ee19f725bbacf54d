"""Benchmark: what `reproducibility: portable` costs, on the backend's tiny Llama, and on the default run.

Three kernel settings, each in a fresh process (torch and MKL read theirs once), alternating, `--rounds`
times: native (this CPU's fastest kernels), portable (sweetflow.core.reproducibility.pin: ATen's AVX2
kernels, MKL's COMPATIBLE branch) and, to show where the cost lies, ATen AVX2 with MKL's AVX2 branch
(the same bytes on Intel CPUs with AVX2 only: MKL ignores that branch on other vendors' CPUs). The
work is what the default run's stages do: training steps of the backend's model (vocab 2,048, 2
layers, hidden 128; batch 8 x 300 tokens, a mean demonstration; 2 threads as `training.threads`) and
one generation batch (128 rows x 64 tokens after 300-token prompts; 2 threads as `agents.base`).

The whole run's cost is extrapolated from the run records in reports/runs/ (each stage's wall time,
imports included): training stages scale by the training ratio, generating stages by the generation
ratio, the others (tasks, the sandbox, the report) not at all. An upper bound: imports and
bookkeeping inside those stages' times do not slow down.

Prints a table and writes bench/results/portable.json. Usage:
    python bench/portable.py [--rounds 3] [--steps 8] [--threads 2] [--rows 128]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "portable.json"
SETTINGS = {
    "native": {},
    "portable": {},  # pin("portable") in the child, as a stage does
    "avx2, Intel only": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2"},
}
# Stages of the default run by what dominates their time (the rest neither trains nor generates).
TRAINING = ("base_model", "critic", "policy")
GENERATING = ("rollout", "evaluate_base", "evaluate_policy", "validate", "candidates", "critic_check", "rank")


def child(kind: str, setting: str, steps: int, threads: int, rows: int) -> None:
    """One measurement, in this process: prints {"s": wall seconds}."""
    if setting == "portable":
        from sweetflow.core.reproducibility import pin

        pin("portable")
    import torch
    from transformers import LlamaForCausalLM

    from sweetflow.agents.transformers import sample
    from sweetflow.models.tiny import tiny_config

    config = tiny_config(2048, max_length=1024)
    torch.manual_seed(0)
    torch.set_num_threads(threads)
    model = LlamaForCausalLM(config)
    if kind == "train":
        optimizer = torch.optim.AdamW(model.parameters(), 1e-3)
        batch = torch.randint(8, 2048, (8, 300))

        def work() -> None:
            model(input_ids=batch, labels=batch).loss.backward()
            optimizer.step()
            optimizer.zero_grad()
    else:
        model.eval()
        prompts = [
            torch.randint(8, 2048, (300 - i % 32,), generator=torch.Generator().manual_seed(i)).tolist()
            for i in range(rows)
        ]

        def work() -> None:
            generators = [torch.Generator().manual_seed(i) for i in range(len(prompts))]
            sample(model, prompts, generators, 1.0, 1.0, 64, 1024, torch.tensor([-1]), 0)

    work()  # warm-up
    started = time.perf_counter()
    for _ in range(steps if kind == "train" else 1):
        work()
    print(json.dumps({"s": time.perf_counter() - started}))


def measure(kind: str, setting: str, args: argparse.Namespace) -> float:
    env = {**os.environ, **SETTINGS[setting]}
    out = subprocess.run(
        [
            sys.executable,
            __file__,
            "--child",
            kind,
            "--setting",
            setting,
            "--steps",
            str(args.steps),
            "--threads",
            str(args.threads),
            "--rows",
            str(args.rows),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])["s"]


def whole_run(ratio: dict[str, float], runs: Path) -> dict:
    """The default run's stage seconds (its run records) and the same scaled by `ratio` per kind of stage."""
    native = scaled = 0.0
    for record in sorted(runs.glob("*.json")):
        stage = json.loads(record.read_text())
        kind = stage["stage"].split("@")[0]
        factor = ratio["train"] if kind in TRAINING else ratio["generate"] if kind in GENERATING else 1.0
        native += stage["wall_time_s"]
        scaled += stage["wall_time_s"] * factor
    return {"native_s": round(native, 1), "portable_s": round(scaled, 1), "ratio": scaled / native if native else None}


def main() -> None:
    from sweetflow.core.artifacts import machine

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=8, help="training steps timed per run")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (the default run's: 2)")
    parser.add_argument("--rows", type=int, default=128, help="rows of the generation batch")
    parser.add_argument("--runs", type=Path, default=ROOT / "reports" / "runs", help="the default run's run records")
    parser.add_argument("--child", choices=["train", "generate"], help=argparse.SUPPRESS)
    parser.add_argument("--setting", choices=list(SETTINGS), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.setting, args.steps, args.threads, args.rows)
        return
    rows, ratio = [], {}
    for kind in ("train", "generate"):
        times = {setting: [] for setting in SETTINGS}
        for _ in range(args.rounds):
            for setting in SETTINGS:  # alternating: a slow spell of the machine hits every setting
                times[setting].append(measure(kind, setting, args))
        median = {setting: statistics.median(t) for setting, t in times.items()}
        ratio[kind] = median["portable"] / median["native"]
        rows.append(
            {
                "work": f"{args.steps} training steps"
                if kind == "train"
                else f"{args.rows} rows x 64 tokens after 300",
                "threads": args.threads,
                **{f"{setting} s": median[setting] for setting in SETTINGS},
                "portable / native": ratio[kind],
                "times": times,
                "rounds": args.rounds,
            }
        )
    table = Table(title="backend's tiny Llama: kernel settings (medians of fresh processes)")
    for column in ("work", *(f"{s} s" for s in SETTINGS), "portable / native"):
        table.add_column(column, justify="right")
    for r in rows:
        table.add_row(r["work"], *(f"{r[f'{s} s']:.2f}" for s in SETTINGS), f"{r['portable / native']:.2f}x")
    Console().print(table)
    total = whole_run(ratio, args.runs)
    if total["ratio"] is not None:
        print(
            f"default run ({args.runs}): {total['native_s']:.0f} s of stages native -> ~{total['portable_s']:.0f} s "
            f"portable, {total['ratio']:.2f}x (upper bound)"
        )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"machine": machine(), "rows": rows, "default_run": total}, indent=2))


if __name__ == "__main__":
    main()
