"""Benchmark: a decoding step of the `transformers` backend with its reserved key/value cache
against transformers' own DynamicCache (which concatenates a new tensor at every step).

Both run the same `sweetflow.agents.transformers.sample` on the same randomly initialised tiny
Llama (the default's size: 2 layers, hidden 128), the same prompts and per-row seeds; the baseline
only swaps the cache layer. The table checks that both generate the same tokens.

Prints a table and writes bench/results/kv_cache.json. Usage:
    python bench/kv_cache.py [--rows 120] [--contexts 256 1024 1792] [--steps 150]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from unittest import mock

import torch
from rich.console import Console
from rich.table import Table
from transformers import DynamicLayer, LlamaForCausalLM

from sweetflow.agents import transformers as backend
from sweetflow.core.artifacts import machine
from sweetflow.models.tiny import tiny_config

RESULTS = Path(__file__).resolve().parent / "results" / "kv_cache.json"


def run(model, prompts: list[list[int]], steps: int, context: int) -> tuple[float, list]:
    generators = [torch.Generator().manual_seed(i) for i in range(len(prompts))]
    started = time.perf_counter()
    # No stop token: every row decodes `steps` tokens, so both caches do the same work.
    out = backend.sample(model, prompts, generators, 1.0, 1.0, steps, context, torch.tensor([-1]), 0)
    return time.perf_counter() - started, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=120)
    parser.add_argument("--contexts", type=int, nargs="+", default=[256, 1024, 1792])
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--vocab", type=int, default=4096)
    args = parser.parse_args()
    torch.set_num_threads(1)  # as the agents generate the tiny model
    context_max = max(args.contexts) + args.steps + 8
    config = tiny_config(args.vocab, max_length=context_max)
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).eval()
    rows = []
    for context in args.contexts:
        g = torch.Generator().manual_seed(context)
        # Ragged prompts, as a batch of dialogues is: left padding and per-row lengths are exercised.
        prompts = [torch.randint(8, args.vocab, (context - i % 16,), generator=g).tolist() for i in range(args.rows)]
        reserved_s, reserved = run(model, prompts, args.steps, context_max)
        with mock.patch.object(backend, "ReservedLayer", lambda capacity: DynamicLayer()):
            dynamic_s, dynamic = run(model, prompts, args.steps, context_max)
        rows.append(
            {
                "rows": args.rows,
                "prompt_tokens": context,
                "steps": args.steps,
                "dynamic_ms_per_step": 1000 * dynamic_s / args.steps,
                "reserved_ms_per_step": 1000 * reserved_s / args.steps,
                "speedup": dynamic_s / reserved_s,
                "same_tokens": reserved == dynamic,
            }
        )
    table = Table(title=f"decoding step, {args.rows} rows, tiny Llama (vocab {args.vocab}), 1 thread")
    for column in ("prompt tokens", "DynamicCache ms/step", "reserved ms/step", "speedup", "same tokens"):
        table.add_column(column, justify="right")
    for r in rows:
        table.add_row(
            str(r["prompt_tokens"]),
            f"{r['dynamic_ms_per_step']:.0f}",
            f"{r['reserved_ms_per_step']:.0f}",
            f"{r['speedup']:.2f}x",
            str(r["same_tokens"]),
        )
    Console().print(table)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"machine": machine(), "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
