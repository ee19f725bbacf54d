"""Benchmark: collaboration episodes per second with the `openai` agent and simulator.

Both talk to a real OpenAI-compatible server on loopback (`transformers serve` of a tiny local
checkpoint with random weights, built here) — what a served policy and simulator cost the rollout
engine, at concurrency 1 and at the default bound. Each episode runs `--turns` agent turns (a random
model never answers early), `--tokens` new tokens per message.

Prints a table and writes bench/results/episodes_throughput.json. Usage:
    python bench/episodes_throughput.py [--tasks 8] [--turns 3] [--tokens 24] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from sweetflow.agents.openai import OpenAIAgent
from sweetflow.agents.server import serve
from sweetflow.backend.domain import sandbox_runtime
from sweetflow.backend.sandbox.pool import Sandbox
from sweetflow.backend.scoring import check_references
from sweetflow.backend.simulators import OpenAIHuman
from sweetflow.backend.tasks.procedural import generate_tasks
from sweetflow.core.artifacts import machine
from sweetflow.core.params import EndpointParams, OpenAIAgentParams
from sweetflow.endpoint import ChatClient
from sweetflow.models.checkpoint import save_checkpoint
from sweetflow.models.tiny import build_model, train_tokenizer
from sweetflow.params import load_params
from sweetflow.rollout.engine import Checkpoint, run_episodes

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "episodes_throughput.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=24)
    parser.add_argument("--concurrency", type=int, default=8, help="requests in flight, against 1")
    args = parser.parse_args()
    params = load_params(ROOT / "params.yaml")

    _, tasks = generate_tasks(0, args.tasks, seed=1)
    rows = []
    with tempfile.TemporaryDirectory() as tmp, Sandbox(params.backend.scoring) as sandbox:
        tasks = [{**t, "expected": c.expected} for t, c in zip(tasks, check_references(tasks, sandbox))]
        # Random weights (it talks nonsense, fast), a tokenizer trained on the tasks' own words.
        tokenizer = train_tokenizer([t["problem_description"] for t in tasks], vocab_size=384, max_turns=10)
        checkpoint = save_checkpoint(build_model(tokenizer, seed=0), tokenizer, Path(tmp) / "checkpoint")
        with serve(params.agents["served_base"].server, checkpoint) as served:  # params.yaml's `transformers serve`
            base_url, model = served.base_url, served.model
            for concurrency in (1, args.concurrency):
                endpoint = EndpointParams(
                    base_url=base_url,
                    model=model,
                    api_key_env="OPENAI_API_KEY",
                    timeout_s=60,
                    max_retries=2,
                    concurrency=concurrency,
                )
                agent = OpenAIAgent(
                    OpenAIAgentParams(
                        backend="openai", endpoint=endpoint, temperature=1.0, top_p=1.0, max_new_tokens=args.tokens
                    )
                )
                human = OpenAIHuman(ChatClient(endpoint), max_new_tokens=args.tokens)
                started = time.perf_counter()
                records = run_episodes(
                    tasks,
                    1,
                    agent,
                    sandbox_runtime(human, sandbox, concurrency),
                    params.episodes.model_copy(update={"max_turns": args.turns}),
                    0,
                    Checkpoint(Path(tmp) / f"c{concurrency}.jsonl"),
                    desc=f"concurrency {concurrency}",
                )
                seconds = time.perf_counter() - started
                requests = sum(len(r["dialogue"]) for r in records)
                rows.append(
                    {
                        "concurrency": concurrency,
                        "episodes": len(records),
                        "requests": requests,
                        "seconds": round(seconds, 2),
                        "episodes_per_s": round(len(records) / seconds, 3),
                        "requests_per_s": round(requests / seconds, 2),
                        "failures": sum(r["failure"] is not None for r in records),
                    }
                )
    base = rows[0]["episodes_per_s"]
    table = Table(
        "concurrency",
        "episodes",
        "requests",
        "seconds",
        "episodes/s",
        "requests/s",
        "failures",
        "× conc. 1",
        title="episodes with the openai agent and simulator (transformers serve, tiny model)",
    )
    for r in rows:
        table.add_row(
            *(
                str(r[k])
                for k in (
                    "concurrency",
                    "episodes",
                    "requests",
                    "seconds",
                    "episodes_per_s",
                    "requests_per_s",
                    "failures",
                )
            ),
            f"{r['episodes_per_s'] / base:.2f}",
        )
    Console().print(table)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"machine": machine(), "args": vars(args), "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
