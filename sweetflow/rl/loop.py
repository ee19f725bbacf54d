"""One flat training loop on accelerate, for this CPU and for several GPUs; every trainer uses it.

Run as a plain process it trains on the CPU (or one GPU). Under `accelerate launch --config_file
configs/accelerate/zero3.yaml` (or fsdp.yaml) the same code runs on every GPU: accelerate shards
the data, and DeepSpeed ZeRO-3 or FSDP shards the weights, gradients and optimiser state.

What differs between SFT, the critic and DPO is only the loss of a batch: a `loss_fn(model, batch)`
returning a `StepResult`. Curves go to DVCLive through accelerate's tracker: `train/<metric>` and
`train/lr` every `LOG_EVERY` steps (means over the window), `eval/<metric>` before training and
after each epoch.
"""

from __future__ import annotations

import math
import os
import shutil
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import torch
from accelerate import Accelerator
from accelerate.utils import set_seed
from torch.utils.data import DataLoader
from tqdm import tqdm

from sweetflow.params import LoraParams, TrainerParams, TrainingParams
from sweetflow.rl.batching import LengthGroupedBatches

LOG_EVERY = 10  # optimiser steps between two points of the training curve
WARMUP_SHARE = 0.05  # of all steps, with a linear ramp of the learning rate
FINAL_LR_SHARE = 0.1  # the cosine decay ends at this share of the peak learning rate
CLIP_NORM = 1.0


@dataclass
class Fitted:
    """What `fit` gives back. `model` and `state` are None on processes other than the main one,
    which alone writes outputs."""

    model: object | None
    state: dict | None  # the full state dict gathered from every process (ZeRO-3 and FSDP keep shards)
    summary: dict  # steps, tokens, losses and evaluations: the same for the same inputs
    timing: dict  # seconds and tokens per second: facts of this run on this machine, for its run record


@dataclass
class StepResult:
    loss: torch.Tensor  # what to backpropagate
    tokens: int  # tokens in the forward pass (for tokens/s)
    metrics: dict[str, float] = field(default_factory=dict)  # logged as train/<name>


def lr_at(step: int, total: int, peak: float) -> float:
    """Linear warm-up, then cosine decay to FINAL_LR_SHARE of the peak (as in nanoGPT)."""
    warmup = max(1, round(WARMUP_SHARE * total))
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return peak * (FINAL_LR_SHARE + (1 - FINAL_LR_SHARE) * 0.5 * (1 + math.cos(math.pi * progress)))


def with_lora(model, lora: LoraParams):
    from peft import LoraConfig, get_peft_model  # only runs that ask for adapters need peft

    config = LoraConfig(
        r=lora.r, lora_alpha=lora.alpha, lora_dropout=lora.dropout, target_modules=lora.target_modules,
        task_type="CAUSAL_LM",
    )  # fmt: skip
    return get_peft_model(model, config)


def launch(p: TrainingParams) -> None:
    """Run the calling stage's training where `p` says. With `accelerate_config` set, replace this
    process by `accelerate launch` of the same stage module and arguments, so that `python -m
    stages.X` (as `dvc repro` runs it) trains on every GPU the config names; otherwise (and in the
    launched processes) fix torch's CPU thread count: a fixed count keeps float reductions, and so
    the trained weights, reproducible."""
    if p.accelerate_config and "ACCELERATE_MIXED_PRECISION" not in os.environ:  # not yet under a launcher
        module = sys.modules["__main__"].__spec__.name
        launcher = [sys.executable, "-m", "accelerate.commands.launch", "--config_file", p.accelerate_config]
        os.execv(sys.executable, launcher + ["-m", module, *sys.argv[1:]])
    if p.threads:
        torch.set_num_threads(p.threads)


def fit(
    model,
    train: list,
    collate_fn: Callable,
    loss_fn: Callable[[object, dict], StepResult],
    p: TrainerParams,
    engine: TrainingParams,
    log_dir: Path | str,
    name: str,
    evaluate: Callable[[object, Accelerator], dict[str, float]] | None = None,
    lengths: list[int] | None = None,
) -> Fitted:
    """Train `model` on `train` for `p.epochs` epochs, the way `engine` says. With `lengths` (the
    padded length of each item) and `engine.group_by_length`, batches hold items of similar length.

    The returned model is unwrapped, with LoRA adapters merged into its weights, so that it saves as
    a plain checkpoint any server loads; the state dict is for `save_pretrained(..., state_dict=...)`.
    """
    accelerator = Accelerator(mixed_precision={"fp32": "no"}.get(engine.precision, engine.precision), log_with="dvclive")
    set_seed(p.seed)  # python, numpy and torch: initialisation of adapters, dropout
    # The same run gives the same weights: on CPU, the backward of indexing with repeated indices
    # (a shared prefix's cache read by several rows) otherwise adds in a thread-dependent order.
    # warn_only: on GPUs an op without a deterministic kernel warns instead of stopping training.
    torch.use_deterministic_algorithms(True, warn_only=True)
    if engine.gradient_checkpointing:
        model.activation_checkpointing_enable()
        model.config.use_cache = False  # the cache is useless while training and conflicts with recomputation
    if engine.lora:
        model = with_lora(model, engine.lora)
    if lengths is not None and engine.group_by_length:
        loader = DataLoader(train, batch_sampler=LengthGroupedBatches(lengths, p.batch_size, p.seed), collate_fn=collate_fn)
    else:
        loader = DataLoader(
            train, batch_size=p.batch_size, shuffle=True, collate_fn=collate_fn,
            generator=torch.Generator().manual_seed(p.seed),
        )  # fmt: skip
    optimizer = torch.optim.AdamW(
        [q for q in model.parameters() if q.requires_grad], lr=p.learning_rate, betas=(0.9, 0.95), weight_decay=0.0
    )
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    # dvcyaml=None: the stage's metrics and plots are declared in the project's dvc.yaml.
    accelerator.init_trackers(name, init_kwargs={"dvclive": {"dir": str(log_dir), "dvcyaml": None, "save_dvc_exp": False}})

    def run_eval(step: int) -> dict[str, float]:
        if evaluate is None:
            return {}
        model.eval()
        with torch.no_grad():
            values = evaluate(model, accelerator)
        model.train()
        if values:
            accelerator.log({f"eval/{k}": v for k, v in values.items()}, step=step)
        return values

    total = p.epochs * len(loader)
    step, tokens, window, epoch_losses = 0, 0, defaultdict(list), []
    summary = {f"eval_{k}_initial": v for k, v in run_eval(0).items()}
    final_eval: dict[str, float] = {}
    started = time.perf_counter()
    bar = tqdm(total=total, desc=name, unit="step", disable=not accelerator.is_local_main_process)
    model.train()
    for epoch in range(p.epochs):
        epoch_losses = []
        for batch in loader:
            lr = lr_at(step, total, p.learning_rate)
            for group in optimizer.param_groups:
                group["lr"] = lr
            out = loss_fn(model, batch)
            accelerator.backward(out.loss)
            accelerator.clip_grad_norm_(model.parameters(), CLIP_NORM)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            tokens += out.tokens
            epoch_losses.append(out.loss.item())
            for k, v in {"loss": epoch_losses[-1], **out.metrics}.items():
                window[k].append(v)
            if step % LOG_EVERY == 0 or step == total:
                means = {k: sum(v) / len(v) for k, v in window.items()}
                accelerator.log({**{f"train/{k}": v for k, v in means.items()}, "train/lr": lr}, step=step)
                bar.set_postfix(loss=f"{means['loss']:.3f}", epoch=epoch + 1)
                window = defaultdict(list)
            bar.update()
        final_eval = run_eval(step)
    bar.close()
    elapsed = time.perf_counter() - started
    tokens = int(accelerator.reduce(torch.tensor(tokens, device=accelerator.device), "sum"))
    summary.update(
        steps=step,
        train_tokens=tokens,
        train_loss_last_epoch=round(sum(epoch_losses) / len(epoch_losses), 5) if epoch_losses else None,
        **{f"eval_{k}_final": v for k, v in final_eval.items()},
    )
    timing = {"train_seconds": round(elapsed, 2), "tokens_per_s": round(tokens / elapsed, 1) if elapsed else None}
    # Into DVCLive's metrics.json only (plot=False): one number each, not a curve. Not the timing:
    # the metrics of the same inputs are the same bytes, so that a rerun changes nothing downstream.
    accelerator.log({k: v for k, v in summary.items() if v is not None}, step=step, log_kwargs={"dvclive": {"plot": False}})

    accelerator.wait_for_everyone()
    state = accelerator.get_state_dict(model)  # a collective: every process takes part
    model = accelerator.unwrap_model(model)
    accelerator.end_training()
    if not accelerator.is_main_process:
        return Fitted(None, None, summary, timing)
    if engine.lora:
        model, state = model.merge_and_unload(), None
    if engine.gradient_checkpointing:
        model.activation_checkpointing_disable()
        model.config.use_cache = True  # the saved checkpoint is for generation
    return Fitted(model.eval(), state, summary, timing)


@contextmanager
def live_report(report: Path | str) -> Iterator[Path]:
    """A temporary directory for DVCLive that replaces `report` when the block succeeds: after a
    kill there is the whole previous report or the whole new one, never a mix."""
    report = Path(report)
    report.parent.mkdir(parents=True, exist_ok=True)
    tmp = report.with_name(f".{report.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        yield tmp
        if tmp.exists():  # only the main process writes one
            shutil.rmtree(report, ignore_errors=True)
            os.replace(tmp, report)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
