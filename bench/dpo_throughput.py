"""Benchmark: DPO training tokens per second of our preference trainer against TRL's `DPOTrainer`.

Same tiny model, same preference pairs, same settings, in the same run:

  (a) `train_preference` (sweetflow.rl.preference): the policy stages' loop on accelerate
      (DVCLive logging included), with the reference log-probs computed once beforehand by
      `reference_segment_logps` (timed separately: column "ref s");
  (b) TRL `DPOTrainer`, reference model run on the fly at every step (TRL's default);
  (c) TRL `DPOTrainer` with `precompute_ref_log_probs=True` (one reference pass before training,
      inside the trainer's constructor; timed separately).

Model: the default tiny Llama (`ModelParams` defaults overridden by the `backend.model` section of params.yaml)
with a tokenizer trained as the `base_model` stage does, on data/backend/tasks and data/backend/demos (run `dvc repro
demos` first); random weights, the reference being the initial policy. Pairs: the prompt is the policy's
chat at the start of a task (system prompt + the task's description, ~200 tokens); the chosen response
is a demonstration's first question on that task (~16 tokens), the rejected one alternately the
demonstration's final answer written at once (~80 tokens) and a question about another task. Ours
tokenises prompt + response through the chat template (`segmented(..., "last", ...)`: the response is
the one scored segment); TRL gets the same text as a conversational dataset and tokenises it itself
(checked, after the timed part, to give the same token ids and scored tokens).

Settings, both sides: the `policies.sweet` section of params.yaml for β, NLL coefficient (TRL:
loss_type ["sigmoid", "sft"] with weights [1, nll_coef]), learning rate and batch size (pairs per
step); 1 epoch, fp32, AdamW (0.9, 0.95), no weight decay, gradient clipping at 1, 1 torch thread, no
evaluation, no checkpoints. Tokens are the real (unpadded) tokens of the chosen and rejected
sequences, prompt included, processed in the epoch, counted the same way for both (ours reads a
pair's shared prompt once per forward pass: its forward-pass tokens, also recorded, are fewer).
"train s" is the wall time of the training call (`train_preference(...)`, `trainer.train()`: set-up
of the accelerator and optimiser included); "prep s" the tokenisation (ours: `segmented`; TRL: its
constructor minus the reference pass). Each run is a forked child process (a clean peak RSS: the
imports and the initial model are inherited, the rest is the run's own); the runs alternate between
the trainers and the median of `--repeats` is reported. Prints a table and writes
bench/results/dpo_throughput.json. About 4 minutes with the defaults on a busy 2-core CPU (6 with
`--repeats 3`). Usage:

    .venv/bin/python bench/dpo_throughput.py [--pairs 200] [--repeats 2]

(the script sets HF_HUB_OFFLINE=1 and the other offline switches itself: nothing is downloaded).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import resource
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

WORKER_ENV = {
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "TQDM_DISABLE": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}
os.environ.update(WORKER_ENV)  # before torch and tokenizers are imported: nothing downloaded, 1 thread

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
TASKS, DEMOS = ROOT / "data/backend/tasks/train.parquet", ROOT / "data/backend/demos/trajectories.parquet"
RESULTS = ROOT / "bench" / "results" / "dpo_throughput.json"
MODES = {
    "ours": "ours: train_preference, ref cached",
    "trl": "TRL DPOTrainer, ref every step",
    "trl_precompute": "TRL DPOTrainer, precompute_ref_log_probs",
}


def rss_mb() -> float:
    """Resident memory of this process now, MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def with_response(pair: dict, side: str) -> list[dict]:
    """The pair's prompt chat followed by its chosen or rejected response."""
    return pair["prompt"] + [{"role": "assistant", "content": pair[side]}]


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


# --- the parent: data, runs, table ------------------------------------------------------------------


def build_pairs(tasks: list[dict], demos: list[dict], n: int, seed: int, max_turns: int) -> list[dict]:
    """`n` pairs as text at a task's opening state (the policy's chat: system prompt and the task):
    chosen, a demonstration's first question on the task; rejected, alternately the demonstration's
    final answer written at once (answering without asking, ColBench's usual failure) and a question
    about another task."""
    from sweetflow.dialogue import EpisodeView
    from sweetflow.views import policy_chat

    by_id = {t["task_id"]: t for t in tasks}
    questions: dict[str, list[str]] = {}
    answers: dict[str, list[str]] = {}
    for demo in demos:
        first, last = demo["dialogue"][0], demo["dialogue"][-1]
        if first["role"] == "agent" and not first["content"].startswith("I WANT TO ANSWER"):
            questions.setdefault(demo["task_id"], []).append(first["content"])
        if last["role"] == "agent" and last["content"].startswith("I WANT TO ANSWER"):
            answers.setdefault(demo["task_id"], []).append(last["content"])
    ids = sorted(set(questions) & set(answers))
    rng = random.Random(seed)
    pairs = []
    for i in range(n):
        task_id = ids[i % len(ids)]
        chosen = questions[task_id][(i // len(ids)) % len(questions[task_id])]
        if i % 2 == 0:
            rejected = rng.choice(answers[task_id])
        else:
            rejected = rng.choice(questions[rng.choice([t for t in ids if t != task_id])])
        prompt = policy_chat(EpisodeView(task_id, by_id[task_id]["problem_description"], [], 0, max_turns=max_turns))
        pairs.append({"prompt": prompt, "chosen": chosen, "rejected": rejected})
    return pairs


def prepare(workdir: Path, n_pairs: int, device: str = "auto") -> dict:
    """Tokenizer, initial model and pairs, saved in `workdir` for the workers; the run's settings
    (`device`: where both trainers run, params `device`'s values)."""
    import polars as pl

    from sweetflow.models.tiny import build_model, tokenizer_corpus, train_tokenizer
    from sweetflow.params import load_params
    from sweetflow.rl.sft import demo_chats

    params = load_params(ROOT / "params.yaml")
    m, policy = params.backend.model, params.policies["sweet"]
    tasks = pl.read_parquet(TASKS).to_dicts()
    demos = pl.read_parquet(DEMOS, columns=["task_id", "seed", "dialogue", "max_turns"]).to_dicts()
    max_turns = params.episodes.max_turns
    corpus = tokenizer_corpus(tasks, demo_chats(tasks, demos), max_turns)
    tokenizer = train_tokenizer(corpus, m.vocab_size, max_turns, m.max_length)
    model = build_model(tokenizer, m.hidden_size, m.layers, m.heads, m.max_length, m.seed, m.intermediate_size)
    tokenizer.save_pretrained(workdir / "model")
    model.save_pretrained(workdir / "model")
    pairs = build_pairs(tasks, demos, n_pairs, m.seed, max_turns)
    settings = {
        "beta": policy.beta,
        "nll_coef": policy.nll_coef,
        "learning_rate": policy.learning_rate,
        "batch_size": policy.batch_size,
        "epochs": 1,
        "precision": "no",
        "threads": 1,
        "device": device,
        "seed": m.seed,
        "max_length": m.max_length,
    }

    def length(chat: list[dict]) -> int:
        return len(tokenizer.apply_chat_template(chat, tokenize=True, return_dict=True)["input_ids"])

    prompts = [length(pair["prompt"]) for pair in pairs]
    responses = {
        side: [length(with_response(pair, side)) - n for pair, n in zip(pairs, prompts)]
        for side in ("chosen", "rejected")
    }
    (workdir / "pairs.json").write_text(json.dumps(pairs))
    (workdir / "settings.json").write_text(json.dumps(settings))
    return {
        "model": {k: getattr(m, k) for k in ("vocab_size", "hidden_size", "layers", "heads", "max_length")},
        "parameters": sum(q.numel() for q in model.parameters()),
        "vocab": len(tokenizer),
        "settings": settings,
        "mean_tokens": {"prompt": statistics.mean(prompts), **{k: statistics.mean(v) for k, v in responses.items()}},
        "chosen_longer_share": statistics.mean(c > r for c, r in zip(responses["chosen"], responses["rejected"])),
    }


def run_worker(mode: str, workdir: Path) -> dict:
    """One training run in a forked child: the heavy imports are the parent's (no start-up cost per
    run), the child's peak RSS is its own (ru_maxrss starts from what it inherited: the imports and
    the initial model)."""
    ctx = multiprocessing.get_context("fork")
    child = ctx.Process(target=worker, args=(mode, workdir))
    child.start()
    child.join()
    out = workdir / f"{mode}.json"
    if child.exitcode != 0 or not out.exists():
        raise RuntimeError(f"the {mode} run failed (exit code {child.exitcode}); its traceback is above")
    result = json.loads(out.read_text())
    out.unlink()
    return result


def main(argv: list[str] | None = None) -> int:
    from sweetflow.core.artifacts import machine

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=200, help="preference pairs trained on (default: 200)")
    parser.add_argument(
        "--repeats", type=int, default=2, help="runs of each trainer, alternating; the median is reported (default: 2)"
    )
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES), help=argparse.SUPPRESS)
    parser.add_argument("--device", default="auto", help="auto (a CUDA GPU when one is visible), cpu, cuda or cuda:N")
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(1)  # before any torch op: no OpenMP pool exists when the runs are forked
    import datasets  # noqa: F401  the runs' imports, done once here: forked children inherit them
    import transformers
    import trl
    from rich.console import Console
    from rich.table import Table
    from trl import DPOConfig, DPOTrainer  # noqa: F401

    import sweetflow.rl.preference  # noqa: F401

    console = Console(width=None if sys.stdout.isatty() else 160)
    if not (TASKS.exists() and DEMOS.exists()):
        console.print(f"[yellow]{TASKS} or {DEMOS} is missing: run `dvc repro demos` first.[/]")
        return 1
    started = time.perf_counter()
    runs: dict[str, list[dict]] = {mode: [] for mode in args.modes}
    with tempfile.TemporaryDirectory(prefix="dpo_bench_") as tmp:
        workdir = Path(tmp)
        setup = prepare(workdir, args.pairs, args.device)
        for repeat in range(args.repeats):
            order = args.modes if repeat % 2 == 0 else args.modes[::-1]  # alternate, so drift hits every trainer
            for mode in order:
                result = run_worker(mode, workdir)
                runs[mode].append(result)
                console.print(
                    f"  run {repeat + 1}/{args.repeats} {mode:15s} train {result['train_s']:6.1f} s, "
                    f"{result['tokens'] / result['train_s']:7.0f} tokens/s"
                )

    results = []
    for mode, rs in runs.items():
        tokens = {r["tokens"] for r in rs}
        assert len(tokens) == 1, f"{mode}: token counts differ between runs: {tokens}"
        keys = ("train_s", "ref_s", "prep_s", "peak_rss_mb", "rss_before_mb")
        median = {k: statistics.median(r[k] for r in rs) for k in keys}
        results.append(
            {
                "mode": mode,
                "trainer": MODES[mode],
                "tokens": rs[0]["tokens"],
                "steps": rs[0]["steps"],
                "train_seconds": median["train_s"],
                "ref_seconds": median["ref_s"],
                "prep_seconds": median["prep_s"],
                "tokens_per_s": rs[0]["tokens"] / median["train_s"],
                "tokens_per_s_with_ref": rs[0]["tokens"] / (median["train_s"] + median["ref_s"]),
                "peak_rss_mb": median["peak_rss_mb"],
                "rss_before_mb": median["rss_before_mb"],
                "same_sequences_as_ours": all(r.get("same_sequences_as_ours", True) for r in rs),
                "runs": rs,
            }
        )
    token_counts = {r["tokens"] for r in results}
    baseline = next((r for r in results if r["mode"] == "trl"), None)
    for r in results:
        r["ratio_to_trl"] = r["tokens_per_s"] / baseline["tokens_per_s"] if baseline else None
        r["ratio_to_trl_with_ref"] = (
            r["tokens_per_s_with_ref"] / baseline["tokens_per_s_with_ref"] if baseline else None
        )

    s = setup["settings"]
    lengths = setup["mean_tokens"]
    table = Table(
        title=f"DPO tokens/s: {args.pairs} pairs ({results[0]['tokens']} tokens; mean prompt {lengths['prompt']:.0f}, "
        f"chosen {lengths['chosen']:.0f}, rejected {lengths['rejected']:.0f}), {s['batch_size']} pairs/step, "
        f"{setup['parameters'] / 1e6:.2f}M parameters, 1 thread, fp32, median of {args.repeats}"
    )
    columns = (
        "trainer",
        "prep s",
        "ref s",
        "train s",
        "tokens/s",
        "x TRL",
        "tokens/s incl. ref",
        "x TRL incl. ref",
        "peak RSS MiB",
    )
    for column in columns:
        table.add_column(column, justify="left" if column == "trainer" else "right", no_wrap=column != "trainer")
    for r in results:
        ratio = "" if r["ratio_to_trl"] is None else f"{r['ratio_to_trl']:.2f}"
        ratio_ref = "" if r["ratio_to_trl_with_ref"] is None else f"{r['ratio_to_trl_with_ref']:.2f}"
        table.add_row(
            r["trainer"],
            f"{r['prep_seconds']:.1f}",
            f"{r['ref_seconds']:.1f}",
            f"{r['train_seconds']:.1f}",
            f"{r['tokens_per_s']:.0f}",
            ratio,
            f"{r['tokens_per_s_with_ref']:.0f}",
            ratio_ref,
            f"{r['peak_rss_mb']:.0f}",
        )
    console.print(table)
    if len(token_counts) != 1:
        console.print(f"[red]token counts differ between trainers: {sorted(token_counts)}[/]")
    if not all(r["same_sequences_as_ours"] for r in results):
        console.print("[red]TRL's tokenisation differs from ours (token ids or completion masks)[/]")

    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    report = {
        **setup,
        "pairs": args.pairs,
        "repeats": args.repeats,
        "same_tokens_both_sides": len(token_counts) == 1,
        "machine": machine(),
        "load_average_after": os.getloadavg(),
        "bench_seconds": round(time.perf_counter() - started, 1),
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "trl": trl.__version__,
        "results": results,
    }
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    console.print(f"wrote {RESULTS.relative_to(ROOT)}")
    return 0


# --- a worker: one training run in a forked process -----------------------------------------------


def worker(mode: str, workdir: Path) -> None:
    import datasets.fingerprint
    import torch
    import transformers
    from transformers import AutoTokenizer, LlamaForCausalLM

    torch.set_num_threads(1)
    warnings.filterwarnings("ignore", category=FutureWarning)  # transformers' deprecation notices, from TRL
    transformers.logging.set_verbosity_error()
    settings = json.loads((workdir / "settings.json").read_text())
    pairs = json.loads((workdir / "pairs.json").read_text())
    tokenizer = AutoTokenizer.from_pretrained(workdir / "model")
    from sweetflow.models.checkpoint import resolve_device

    model = LlamaForCausalLM.from_pretrained(workdir / "model", dtype=torch.float32).to(
        resolve_device(settings["device"])
    )
    rss_before = rss_mb()
    with tempfile.TemporaryDirectory(prefix=f"{mode}_") as tmp:
        run = run_ours if mode == "ours" else run_trl
        result = run(model, tokenizer, pairs, settings, Path(tmp), precompute=mode == "trl_precompute")
    result.update(
        mode=mode,
        rss_before_mb=round(rss_before, 1),
        peak_rss_mb=round(peak_rss_mb(), 1),
        threads_after=torch.get_num_threads(),
    )
    if result["threads_after"] != 1:
        raise RuntimeError(f"{mode}: torch ran with {result['threads_after']} threads, not 1")
    (workdir / f"{mode}.json").write_text(json.dumps(result))
    # datasets' temporary cache of in-memory datasets (TRL's cached reference log-probs): removed at
    # exit, which a forked child skips
    shutil.rmtree(datasets.fingerprint.get_temporary_cache_files_directory(), ignore_errors=True)


def run_ours(model, tokenizer, pairs: list[dict], s: dict, tmp: Path, precompute: bool) -> dict:
    from sweetflow.core.params import TrainerParams
    from sweetflow.params import load_params
    from sweetflow.rl.logprobs import reference_segment_logps
    from sweetflow.rl.loop import TrainRun
    from sweetflow.rl.loss import PreferenceLoss
    from sweetflow.rl.preference import ScoredPairs, train_preference
    from sweetflow.rl.sequences import PairData, segmented

    started = time.perf_counter()
    sequences = []
    for pair in pairs:
        for side in ("chosen", "rejected"):
            sequence = segmented(tokenizer, with_response(pair, side), "last", s["max_length"])
            if sequence is None:
                raise ValueError(f"a pair does not fit in max_length={s['max_length']}")
            sequences.append(sequence)
    data = PairData(sequences, [(2 * i, 2 * i + 1) for i in range(len(pairs))])
    prep_s = time.perf_counter() - started

    # The reference is the initial policy: its log-probs once, 2 × batch_size sequences per forward
    # (as TRL's precompute: batch_size pairs, chosen and rejected).
    started = time.perf_counter()
    ref = reference_segment_logps(model, data.sequences, 2 * s["batch_size"], tokenizer.pad_token_id)
    ref_s = time.perf_counter() - started

    p = TrainerParams(seed=s["seed"], epochs=1, learning_rate=s["learning_rate"], batch_size=s["batch_size"])
    engine = load_params(ROOT / "params.yaml").training.model_copy(update={"threads": 1, "precision": s["precision"]})
    loss = PreferenceLoss(s["beta"], length_normalize=False, nll_coef=s["nll_coef"])
    started = time.perf_counter()
    run = TrainRun(trainer=p, engine=engine, log_dir=tmp / "live", name="dpo_bench", device=s["device"])
    fitted = train_preference(model, ScoredPairs(data, ref), loss, run=run, pad_id=tokenizer.pad_token_id)
    train_s = time.perf_counter() - started
    summary = fitted.summary
    # The loop counts the tokens of its forward passes: a pair's shared prompt is read once there.
    if not 0 < summary["train_tokens"] <= data.tokens():
        raise RuntimeError(f"the loop counted {summary['train_tokens']} tokens, the data holds {data.tokens()}")
    return {
        "tokens": data.tokens(),
        "forward_tokens": summary["train_tokens"],
        "steps": summary["steps"],
        "prep_s": prep_s,
        "ref_s": ref_s,
        "train_s": train_s,
        "loop_seconds": fitted.run["train_seconds"],
        "loss_last_epoch": summary["train_loss_last_epoch"],
    }


def run_trl(model, tokenizer, pairs: list[dict], s: dict, tmp: Path, precompute: bool) -> dict:
    from datasets import Dataset
    from transformers import PrinterCallback
    from trl import DPOConfig, DPOTrainer

    from sweetflow.models.checkpoint import resolve_device

    class TimedDPOTrainer(DPOTrainer):
        ref_seconds = 0.0

        def _precompute_ref_logps(self, *a, **kw):
            started = time.perf_counter()
            try:
                return super()._precompute_ref_logps(*a, **kw)
            finally:
                TimedDPOTrainer.ref_seconds += time.perf_counter() - started

    dataset = Dataset.from_list(
        [
            {
                "prompt": pair["prompt"],
                "chosen": [{"role": "assistant", "content": pair["chosen"]}],
                "rejected": [{"role": "assistant", "content": pair["rejected"]}],
            }
            for pair in pairs
        ]
    )
    args = DPOConfig(
        output_dir=str(tmp / "out"),
        beta=s["beta"],
        loss_type=["sigmoid", "sft"],
        loss_weights=[1.0, s["nll_coef"]],
        per_device_train_batch_size=s["batch_size"],
        learning_rate=s["learning_rate"],
        num_train_epochs=1,
        adam_beta1=0.9,
        adam_beta2=0.95,
        weight_decay=0.0,
        max_grad_norm=1.0,
        lr_scheduler_type="cosine",
        warmup_steps=0.05,
        seed=s["seed"],
        bf16=False,
        fp16=False,
        use_cpu=resolve_device(s["device"]).type == "cpu",
        max_length=s["max_length"],
        precompute_ref_log_probs=precompute,
        report_to="none",
        save_strategy="no",
        eval_strategy="no",
        logging_strategy="no",
        disable_tqdm=True,
        dataloader_num_workers=0,
    )
    started = time.perf_counter()
    # ref_model=None: TRL loads its own copy of the initial model as the reference (none with precompute).
    trainer = TimedDPOTrainer(model, ref_model=None, args=args, train_dataset=dataset, processing_class=tokenizer)
    trainer.remove_callback(PrinterCallback)  # it prints the final metrics even with logging_strategy "no"
    init_s = time.perf_counter() - started
    started = time.perf_counter()
    output = trainer.train()
    train_s = time.perf_counter() - started
    tokenized = trainer.train_dataset
    rows = list(zip(tokenized["prompt_ids"], tokenized["chosen_ids"], tokenized["rejected_ids"], strict=True))
    tokens = sum(2 * len(p) + len(c) + len(r) for p, c, r in rows)
    return {
        "tokens": tokens,
        "same_sequences_as_ours": same_sequences(tokenizer, pairs, rows, s["max_length"]),
        "steps": output.global_step,
        "prep_s": init_s - TimedDPOTrainer.ref_seconds,
        "ref_s": TimedDPOTrainer.ref_seconds,
        "train_s": train_s,
        "loop_seconds": output.metrics.get("train_runtime"),
        "loss_last_epoch": output.training_loss,
    }


def same_sequences(tokenizer, pairs: list[dict], rows: list[tuple], max_length: int) -> bool:
    """Whether TRL's tokenisation gives exactly our token ids, with its completion being our scored
    segment (checked after the timed part)."""
    from sweetflow.rl.sequences import segmented

    for pair, (prompt, chosen, rejected) in zip(pairs, rows, strict=True):
        for side, completion in (("chosen", chosen), ("rejected", rejected)):
            ours = segmented(tokenizer, with_response(pair, side), "last", max_length)
            if ours.input_ids != prompt + completion or ours.segment_ids != [-1] * len(prompt) + [0] * len(completion):
                return False
    return True


if __name__ == "__main__":
    sys.exit(main())
