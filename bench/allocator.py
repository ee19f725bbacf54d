"""Benchmark: training steps and a generation batch of the tiny model, with and without the stages'
malloc settings (`sweetflow/core/memory.py`, `keep_freed_memory`: freed memory kept for reuse, up to
1 GiB, instead of handed back to the system at every step).

Each variant runs in a fresh process (malloc's settings are per process and best made before any
large allocation), alternating, `--rounds` times; the table gives each one's median seconds,
system-CPU seconds and peak resident MiB, and the ratio. The model is the frontend's tiny Llama (vocab
8,192, 2 layers, hidden 128); a step is batch 8 x 750 tokens, a median design dialogue, or (the second
row) of a length drawn anew at each step, as a real run's batches are: where a heap that keeps freed
blocks can fragment.

Prints a table and writes bench/results/allocator.json. Usage:
    python bench/allocator.py [--rounds 3] [--steps 12] [--rows 128] [--tokens 96]
"""

from __future__ import annotations

import argparse
import json
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
WORK = {
    "train": "{steps} training steps",
    "vary": "{steps} training steps, lengths 128-1,024",
    "generate": "{rows} rows x {tokens} tokens, 900-token prompts",
}


def child(kind: str, keep: bool, steps: int, rows: int, tokens: int) -> None:
    """One measurement, in this process: prints {"s": wall seconds, "sys": system CPU seconds, "mib": peak
    resident MiB}."""
    if keep:
        from sweetflow.core.memory import keep_freed_memory

        keep_freed_memory()
    import torch
    from transformers import LlamaForCausalLM

    from sweetflow.agents.transformers import sample
    from sweetflow.models.tiny import tiny_config

    config = tiny_config(8192, max_length=2048)
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    if kind in ("train", "vary"):
        torch.set_num_threads(2)  # as the training stages
        optimizer = torch.optim.AdamW(model.parameters(), 1e-3)
        lengths = (
            [750] * (steps + 1)
            if kind == "train"
            else torch.randint(128, 1025, (steps + 1,), generator=torch.Generator().manual_seed(0)).tolist()
        )
        batches = iter([torch.randint(8, 8192, (8, n)) for n in lengths])

        def work() -> None:
            batch = next(batches)
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
    for _ in range(1 if kind == "generate" else steps):
        work()
    after = resource.getrusage(resource.RUSAGE_SELF)
    seconds = time.perf_counter() - started
    print(json.dumps({"s": seconds, "sys": after.ru_stime - before.ru_stime, "mib": after.ru_maxrss / 1024}))


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
    from sweetflow.core.artifacts import machine

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=12, help="training steps timed per run")
    parser.add_argument("--rows", type=int, default=128, help="rows of the generation batch")
    parser.add_argument("--tokens", type=int, default=96, help="tokens each row generates")
    parser.add_argument("--child", choices=WORK, help=argparse.SUPPRESS)
    parser.add_argument("--keep", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, bool(args.keep), args.steps, args.rows, args.tokens)
        return
    rows = []
    for kind in WORK:
        runs = {False: [], True: []}
        for _ in range(args.rounds):
            for keep in (False, True):  # alternating: a slow spell of the machine hits both
                runs[keep].append(measure(kind, keep, args))
        median = {k: {m: statistics.median(r[m] for r in v) for m in ("s", "sys", "mib")} for k, v in runs.items()}
        rows.append(
            {
                "work": WORK[kind].format(steps=args.steps, rows=args.rows, tokens=args.tokens),
                "default_s": median[False]["s"],
                "default_sys_s": median[False]["sys"],
                "default_peak_mib": median[False]["mib"],
                "kept_s": median[True]["s"],
                "kept_sys_s": median[True]["sys"],
                "kept_peak_mib": median[True]["mib"],
                "speedup": median[False]["s"] / median[True]["s"],
                "rounds": args.rounds,
            }
        )
    table = Table(title="tiny Llama (vocab 8,192): glibc's default malloc vs freed memory kept (medians)")
    columns = ("work", "default s", "default sys s", "default peak MiB", "kept s", "kept sys s", "kept peak MiB")
    for column in (*columns, "speedup"):
        table.add_column(column, justify="right")
    for r in rows:
        table.add_row(
            r["work"],
            f"{r['default_s']:.2f}",
            f"{r['default_sys_s']:.2f}",
            f"{r['default_peak_mib']:.0f}",
            f"{r['kept_s']:.2f}",
            f"{r['kept_sys_s']:.2f}",
            f"{r['kept_peak_mib']:.0f}",
            f"{r['speedup']:.2f}x",
        )
    Console().print(table)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"machine": machine(), "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
