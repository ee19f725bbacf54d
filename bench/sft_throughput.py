"""Benchmark: SFT training tokens per second of the `base_model` stage's loop on this CPU.

The model, tokenizer and examples are the stage's own for the `backend.model` section of params.yaml (the
default tiny config unless changed): a tokenizer trained on data/backend/tasks and data/backend/demos (run `dvc repro
demos` first), the first `--examples` demonstrations, batches of `model.batch_size`. Each
configuration trains one epoch from the same initial weights:

  (a) `train_sft` (sweetflow.rl.sft): the stage's loop on accelerate, DVCLive logging included,
      with length-grouped batches (`group_by_length`, the default) and with plainly shuffled ones;
  (b) `plain torch`, the baseline: shuffled batches, the same optimiser, clipping and schedule, no
      accelerate, no logging.

for each precision (fp32, bf16 autocast) and torch thread count (1, 2). Tokens are all tokens the
model reads (prompt and answer; padding excluded); "epoch loss" is the loop's mean training loss over the
epoch, which shows what bf16 autocast does to learning. Prints a table and writes
bench/results/sft_throughput.json. Usage:
    python bench/sft_throughput.py [--examples 160] [--threads 1 2] [--precisions fp32 bf16]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

import polars as pl
import torch
from accelerate.state import AcceleratorState
from rich.console import Console
from rich.table import Table
from torch.utils.data import DataLoader

from sweetflow.core.artifacts import gpus, machine
from sweetflow.core.params import ModelParams, TrainingParams
from sweetflow.models.checkpoint import resolve_device
from sweetflow.models.tiny import build_model, tokenizer_corpus, train_tokenizer
from sweetflow.params import load_params
from sweetflow.rl.loop import TrainRun, lr_at
from sweetflow.rl.sft import collate, demo_chats, encode_chats, train_sft

ROOT = Path(__file__).resolve().parent.parent
TASKS, DEMOS = ROOT / "data/backend/tasks/train.parquet", ROOT / "data/backend/demos/trajectories.parquet"
RESULTS = ROOT / "bench" / "results" / "sft_throughput.json"


def plain_torch_loop(
    model, examples, p: ModelParams, engine: TrainingParams, pad_id: int, device: torch.device
) -> tuple[int, float]:
    """The baseline: what train_sft does per step, written directly against torch, on `device`."""
    model.to(device)
    loader = DataLoader(
        examples,
        batch_size=p.batch_size,
        shuffle=True,
        generator=torch.Generator().manual_seed(p.seed),
        collate_fn=lambda batch: collate(batch, pad_id),
    )
    optimizer = torch.optim.AdamW(model.parameters(), lr=p.learning_rate, betas=(0.9, 0.95), weight_decay=0.0)
    autocast = torch.autocast(device.type, dtype=torch.bfloat16) if engine.precision == "bf16" else nullcontext()
    model.train()
    tokens, started = 0, time.perf_counter()
    for step, batch in enumerate(loader):
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step, len(loader), p.learning_rate, engine)
        batch = {key: value.to(device) for key, value in batch.items()}
        with autocast:
            loss = model(**batch).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), engine.clip_norm)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        tokens += int(batch["attention_mask"].sum())  # a GPU's queue is drained here, every step
    return tokens, time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", type=int, default=160, help="demonstrations trained on (default: 160)")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="torch thread counts to compare")
    parser.add_argument("--precisions", nargs="+", default=["fp32", "bf16"], help="training.precision values")
    parser.add_argument("--device", default="auto", help="auto (a CUDA GPU when one is visible), cpu, cuda or cuda:N")
    args = parser.parse_args(argv)
    device = resolve_device(args.device)
    console = Console()
    if not (TASKS.exists() and DEMOS.exists()):
        console.print(f"[yellow]{TASKS} or {DEMOS} is missing: run `dvc repro demos` first.[/]")
        return 1

    params = load_params(ROOT / "params.yaml")
    base = params.backend.model
    tasks = pl.read_parquet(TASKS).to_dicts()
    demos = pl.read_parquet(DEMOS, columns=["task_id", "seed", "dialogue", "max_turns"]).to_dicts()
    max_turns = params.episodes.max_turns
    chats = demo_chats(tasks, demos)
    tokenizer = train_tokenizer(tokenizer_corpus(tasks, chats, max_turns), base.vocab_size, max_turns, base.max_length)
    examples, _ = encode_chats(tokenizer, chats[: args.examples], base.max_length)

    results = []
    for threads in args.threads:
        torch.set_num_threads(threads)
        for precision in args.precisions:
            row = {"threads": threads, "precision": precision}
            for grouped in (True, False):
                p = base.model_copy(update={"epochs": 1})
                engine = params.training.model_copy(update={"precision": precision, "group_by_length": grouped})
                model = build_model(
                    tokenizer, p.hidden_size, p.layers, p.heads, p.max_length, p.seed, p.intermediate_size
                )
                AcceleratorState._reset_state(True)  # accelerate allows one precision per process otherwise
                with tempfile.TemporaryDirectory() as tmp:
                    run = TrainRun(trainer=p, engine=engine, log_dir=Path(tmp) / "live", name="sft", device=args.device)
                    fitted = train_sft(model, examples, [], run=run, pad_id=tokenizer.pad_token_id)
                loop = "train_sft, grouped" if grouped else "train_sft, shuffled"
                results.append(
                    {
                        **row,
                        "loop": loop,
                        "tokens": fitted.summary["train_tokens"],
                        "seconds": fitted.run["train_seconds"],
                        "loss": fitted.summary["train_loss_last_epoch"],
                    }
                )
            model = build_model(tokenizer, p.hidden_size, p.layers, p.heads, p.max_length, p.seed, p.intermediate_size)
            tokens, seconds = plain_torch_loop(model, examples, p, engine, tokenizer.pad_token_id, device)
            results.append({**row, "loop": "plain torch", "tokens": tokens, "seconds": seconds, "loss": None})
    for r in results:
        r["tokens_per_s"] = r["tokens"] / r["seconds"]
    for start in range(0, len(results), 3):  # grouped, shuffled, baseline
        *ours, baseline = results[start : start + 3]
        for r in ours:
            r["ratio_to_baseline"] = r["tokens_per_s"] / baseline["tokens_per_s"]
        baseline["ratio_to_baseline"] = 1.0

    parameters = sum(q.numel() for q in model.parameters())
    table = Table(
        title=f"SFT tokens/s: {len(examples)} demonstrations ({results[0]['tokens']} tokens), batch {base.batch_size}, "
        f"{parameters / 1e6:.2f}M parameters"
    )
    for column in ("loop", "threads", "precision", "seconds", "tokens/s", "x plain torch", "epoch loss"):
        table.add_column(column, justify="left" if column == "loop" else "right", no_wrap=True)
    for r in results:
        table.add_row(
            r["loop"],
            str(r["threads"]),
            r["precision"],
            f"{r['seconds']:.1f}",
            f"{r['tokens_per_s']:.0f}",
            f"{r['ratio_to_baseline']:.2f}",
            "" if r["loss"] is None else f"{r['loss']:.4f}",
        )
    console.print(table)

    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    report = {
        "model": base.model_dump(mode="json"),
        "parameters": parameters,
        "examples": len(examples),
        "machine": machine(),
        "device": {"device": device.type, "gpus": gpus(torch)},
        "load_average_after": os.getloadavg(),
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "results": results,
    }
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    console.print(f"wrote {RESULTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
