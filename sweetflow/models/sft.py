"""Supervised fine-tuning: one flat loop on accelerate, for this CPU and for several GPUs.

Run as a plain process it trains on the CPU (or one GPU). Under `accelerate launch --config_file
configs/accelerate/zero3.yaml` (or fsdp.yaml) the same code runs on every GPU: accelerate shards
the data, and DeepSpeed ZeRO-3 or FSDP shards the weights, gradients and optimiser state.

The loss is the mean cross-entropy over assistant tokens (labels elsewhere are IGNORE). Curves go
to DVCLive through accelerate's tracker: `train/loss` and `train/lr` every `LOG_EVERY` steps,
`eval/loss` on held-out demonstrations after each epoch.
"""

from __future__ import annotations

import math
import time
from functools import partial
from pathlib import Path

import torch
from accelerate import Accelerator
from accelerate.utils import set_seed
from torch.utils.data import DataLoader
from tqdm import tqdm

from sweetflow.models.data import IGNORE, Example, collate
from sweetflow.params import LoraParams, ModelParams

LOG_EVERY = 10  # optimiser steps between two points of the training curve
WARMUP_SHARE = 0.05  # of all steps, with a linear ramp of the learning rate
FINAL_LR_SHARE = 0.1  # the cosine decay ends at this share of the peak learning rate
CLIP_NORM = 1.0


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


def train_sft(
    model, train: list[Example], holdout: list[Example], p: ModelParams, pad_id: int, log_dir: Path | str
) -> tuple[object | None, dict | None, dict]:
    """Fine-tune `model` on `train` for `p.sft_epochs` epochs; return (model, state_dict, summary).

    The returned model is unwrapped, with LoRA adapters merged into its weights, so that it saves as
    a plain checkpoint any server loads; `state_dict` is the full one gathered from every process
    (ZeRO-3 and FSDP keep only shards), for `save_pretrained(..., state_dict=...)`. Both are None on
    processes other than the main one, which alone writes outputs.
    """
    accelerator = Accelerator(mixed_precision=p.precision, log_with="dvclive")
    set_seed(p.seed)  # python, numpy and torch: initialisation of adapters, dropout
    if p.gradient_checkpointing:
        model.activation_checkpointing_enable()
        model.config.use_cache = False  # the cache is useless while training and conflicts with recomputation
    if p.lora:
        model = with_lora(model, p.lora)
    collate_fn = partial(collate, pad_id=pad_id)
    loader = DataLoader(
        train, batch_size=p.batch_size, shuffle=True, collate_fn=collate_fn,
        generator=torch.Generator().manual_seed(p.seed),
    )  # fmt: skip
    eval_loader = DataLoader(holdout, batch_size=p.batch_size, collate_fn=collate_fn)
    optimizer = torch.optim.AdamW(
        [q for q in model.parameters() if q.requires_grad], lr=p.learning_rate, betas=(0.9, 0.95), weight_decay=0.0
    )
    model, optimizer, loader, eval_loader = accelerator.prepare(model, optimizer, loader, eval_loader)
    # dvcyaml=None: the stage's metrics and plots are declared in the project's dvc.yaml.
    accelerator.init_trackers("sft", init_kwargs={"dvclive": {"dir": str(log_dir), "dvcyaml": None, "save_dvc_exp": False}})

    total = p.sft_epochs * len(loader)
    step, tokens, window, epoch_losses = 0, 0, [], []
    eval_loss = mean_loss(model, eval_loader, accelerator)
    summary = {"eval_loss_initial": eval_loss}
    started = time.perf_counter()
    bar = tqdm(total=total, desc="sft", unit="step", disable=not accelerator.is_local_main_process)
    for epoch in range(p.sft_epochs):
        model.train()
        epoch_losses = []
        for batch in loader:
            lr = lr_at(step, total, p.learning_rate)
            for group in optimizer.param_groups:
                group["lr"] = lr
            loss = model(**batch).loss
            accelerator.backward(loss)
            accelerator.clip_grad_norm_(model.parameters(), CLIP_NORM)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            tokens += int(batch["attention_mask"].sum())
            window.append(loss.item())
            epoch_losses.append(window[-1])
            if step % LOG_EVERY == 0 or step == total:
                accelerator.log({"train/loss": sum(window) / len(window), "train/lr": lr}, step=step)
                bar.set_postfix(loss=f"{sum(window) / len(window):.3f}", epoch=epoch + 1)
                window = []
            bar.update()
        eval_loss = mean_loss(model, eval_loader, accelerator)
        if eval_loss is not None:
            accelerator.log({"eval/loss": eval_loss}, step=step)
    bar.close()
    elapsed = time.perf_counter() - started
    tokens = int(accelerator.reduce(torch.tensor(tokens, device=accelerator.device), "sum"))
    summary.update(
        steps=step,
        train_tokens=tokens,
        train_seconds=round(elapsed, 2),
        tokens_per_s=round(tokens / elapsed, 1) if elapsed else None,
        train_loss_last_epoch=round(sum(epoch_losses) / len(epoch_losses), 5) if epoch_losses else None,
        eval_loss_final=eval_loss,
    )
    # Into DVCLive's metrics.json only (plot=False): one number each, not a curve.
    final = {k: v for k, v in summary.items() if v is not None}
    accelerator.log(final, step=step, log_kwargs={"dvclive": {"plot": False}})

    accelerator.wait_for_everyone()
    state = accelerator.get_state_dict(model)  # a collective: every process takes part
    model = accelerator.unwrap_model(model)
    accelerator.end_training()
    if not accelerator.is_main_process:
        return None, None, summary
    if p.lora:
        model, state = model.merge_and_unload(), None
    if p.gradient_checkpointing:
        model.activation_checkpointing_disable()
        model.config.use_cache = True  # the saved checkpoint is for generation
    return model, state, summary


@torch.no_grad()
def mean_loss(model, loader, accelerator: Accelerator) -> float | None:
    """Cross-entropy per assistant token over a whole loader, summed over processes (None if empty)."""
    if not len(loader):
        return None
    model.eval()
    total = torch.zeros(2, device=accelerator.device)
    for batch in loader:
        n = (batch["labels"][:, 1:] != IGNORE).sum()  # targets, after the model's one-token shift
        total += torch.stack([model(**batch).loss.float() * n, n.float()])
    total = accelerator.reduce(total, "sum")
    model.train()
    return round(float(total[0] / total[1]), 5) if total[1] > 0 else None
