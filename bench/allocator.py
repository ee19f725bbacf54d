"""Benchmark: training steps and a generation batch of the tiny model, with and without the stages'
malloc settings (`stages/_common.py`, `keep_freed_memory`: freed memory kept for reuse instead of handed
back to the system at every step).

Each variant runs in a fresh process (malloc's settings are per process and best made before any
large allocation), alternating, `--rounds` times; the table gives each one's median seconds and
system-CPU seconds, and the ratio. The model is the frontend's tiny Llama (vocab 8,192, 2 layers,
hidden 128); a step is batch 8 x 750 tokens, a median design dialogue.

Prints a table and writes bench/results/allocator.json. Usage:
    python bench/allocator.py [--rounds 3] [--steps 12] [--rows 128] [--tokens 96]
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import json
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "allocator.json"
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)


def keep_freed_memory() -> None:
    """The stages' two mallopt calls (`stages/_common.py`, `keep_freed_memory`): glibc keeps up to
    1 GiB of freed memory for reuse. Written out here so that the benchmark imports only the library."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    libc.mallopt(M_MMAP_THRESHOLD, 1 << 30)
    libc.mallopt(M_TRIM_THRESHOLD, 1 << 30)


def child(kind: str, keep: bool, steps: int, rows: int, tokens: int) -> None:
    """One measurement, in this process: prints {"s": wall seconds, "sys": system CPU seconds}."""
    if keep:
        keep_freed_memory()
    import torch
    from transformers import LlamaForCausalLM

    from sweetflow.agents.transformers import sample
    from sweetflow.models.tiny import tiny_config

    config = tiny_config(8192, max_length=2048)
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    if kind == "train":
        torch.set_num_threads(2)  # as the training stages
        optimizer = torch.optim.AdamW(model.parameters(), 1e-3)
        batch = torch.randint(8, 8192, (8, 750))

        def work() -> None:
            model(input_ids=batch, labels=batch).loss.backward()
            optimizer.step()
            optimizer.zero_grad()
    else:
        torch.set_num_threads(1)  # as the agents generate
        model.eval()
        prompts = [
            torch.randint(8, 8192, (900 - i % 64,), generator=torch.Generator().manual_seed(i)).tolist()
            for i in range(rows)
        ]

        def work() -> None:
            generators = [torch.Generator().manual_seed(i) for i in range(len(prompts))]
            sample(model, prompts, generators, 1.0, 1.0, tokens, 2048, torch.tensor([-1]), 0)

    work()  # warm-up: the first pass allocates in any case
    before, started = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    for _ in range(steps if kind == "train" else 1):
        work()
    after = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"s": time.perf_counter() - started, "sys": after.ru_stime - before.ru_stime}))


def measure(kind: str, keep: bool, args: argparse.Namespace) -> dict:
    out = subprocess.run(
        [
            sys.executable,
            __file__,
            "--child",
            kind,
            "--keep",
            str(int(keep)),
            "--steps",
            str(args.steps),
            "--rows",
            str(args.rows),
            "--tokens",
            str(args.tokens),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=12, help="training steps timed per run")
    parser.add_argument("--rows", type=int, default=128, help="rows of the generation batch")
    parser.add_argument("--tokens", type=int, default=96, help="tokens each row generates")
    parser.add_argument("--child", choices=["train", "generate"], help=argparse.SUPPRESS)
    parser.add_argument("--keep", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, bool(args.keep), args.steps, args.rows, args.tokens)
        return
    rows = []
    for kind in ("train", "generate"):
        runs = {False: [], True: []}
        for _ in range(args.rounds):
            for keep in (False, True):  # alternating: a slow spell of the machine hits both
                runs[keep].append(measure(kind, keep, args))
        median = {k: {m: statistics.median(r[m] for r in v) for m in ("s", "sys")} for k, v in runs.items()}
        rows.append(
            {
                "work": f"{args.steps} training steps"
                if kind == "train"
                else f"{args.rows} rows x {args.tokens} tokens, 900-token prompts",
                "default_s": median[False]["s"],
                "default_sys_s": median[False]["sys"],
                "kept_s": median[True]["s"],
                "kept_sys_s": median[True]["sys"],
                "speedup": median[False]["s"] / median[True]["s"],
                "rounds": args.rounds,
            }
        )
    table = Table(title="tiny Llama (vocab 8,192): glibc's default malloc vs freed memory kept (medians)")
    for column in ("work", "default s", "default sys s", "kept s", "kept sys s", "speedup"):
        table.add_column(column, justify="right")
    for r in rows:
        table.add_row(
            r["work"],
            f"{r['default_s']:.2f}",
            f"{r['default_sys_s']:.2f}",
            f"{r['kept_s']:.2f}",
            f"{r['kept_sys_s']:.2f}",
            f"{r['speedup']:.2f}x",
        )
    Console().print(table)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"machine": platform.processor() or platform.machine(), "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
