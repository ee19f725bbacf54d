"""Stage `critic@<domain>-<name>`: a SWEET-RL critic (docs/algorithm.md, step 3).

`python -m stages.critic DOMAIN NAME` reads params `critics.NAME`, the domain's training tasks (for
each task's reference solution, the training-time information), its offline rollouts, their
trajectory pairs and its base model, which the critic starts from and which is its reference. With
`warmup_epochs`, the critic first fine-tunes on the successful rollouts in its own view, and that model
is its start and its reference instead, kept beside the critic for the ranking (`sweetflow.rl.ranking`).
Each trajectory is
read in the critic's view — the reference solution in the system message, unless `training_info`
is off (the ablation) — and each agent turn is one segment: the critic's advantage of a turn is
its length-normalised log-ratio against its reference, and the Bradley–Terry loss compares the
sums over the turns of the chosen and the rejected trajectory. The pairs of a few held-out tasks
measure `eval/rewards/accuracies` (how often the critic prefers the better trajectory) and how far
the critic drifted as a language model: its NLL of their turns before and after, and the mean
per-token KL divergence from its reference there (`heldout_kl_to_reference`, `sweetflow.rl.drift`).

Resumable: a run cut off keeps the warmed-up model once warm-up ends, the reference's log-probs as far as
it computed them and each training's state (saved every `TrainRun.save_every_s`) under
`.sweetflow/checkpoints/`, and computes and trains only what is left. The warmed-up model stays kept after
the stage, named by what decides the warm-up alone: the critic tuned at several learning rates warms up once.

Writes `models/DOMAIN/critics/NAME/` (the checkpoint; `reference/`, the warmed-up reference, with
warm-up only; `reference_logps.pt`, the reference's per-turn log-probs of the training sequences,
computed once; `training_config.json`; `manifest.json`) and `reports/DOMAIN/stages/critics/NAME/`
(DVCLive `metrics.json` and curves).
"""

from __future__ import annotations

import json
import shutil
import sys
from functools import partial
from pathlib import Path

import polars as pl
import torch

from stages._common import begin
from sweetflow.core.artifacts import checkpoint_path, write_json, written_whole
from sweetflow.core.errors import InputError, run_stage
from sweetflow.core.params import CriticParams, TrainingParams
from sweetflow.core.tables import PAIRS, TRAJECTORIES, read_tasks, task_file
from sweetflow.models.checkpoint import load_checkpoint, pad_id, placement, resolve_device, save_checkpoint
from sweetflow.rl.drift import mean_token_kl
from sweetflow.rl.logprobs import kept_segment_logps
from sweetflow.rl.loop import TrainRun, forward_batch_size, launch, live_report, process_state
from sweetflow.rl.loss import PreferenceLoss
from sweetflow.rl.preference import ScoredPairs, train_preference
from sweetflow.rl.ranking import REFERENCE_DIR, critic_reference
from sweetflow.rl.sequences import context_length, successful_chats, trajectory_pair_data
from sweetflow.rl.sft import encode_chats, split_by_task, train_sft


def main() -> None:
    stage = begin("critic", __doc__, item="critics")
    domain, name = stage.domain, stage.item
    p, engine = stage.params.critics[name], stage.params.training
    launch(engine)

    # Inputs: the training tasks, their rollouts and pairs, and the base model.
    tasks_file, rollout = stage.upstream("tasks", file=task_file("train")), stage.upstream("rollout", file=TRAJECTORIES)
    pairs_file, base = stage.upstream("trajectory_pairs", file=PAIRS), stage.upstream("base_model")
    tasks = {t["task_id"]: t for t in read_tasks(domain, "train")}
    trajectories = pl.read_parquet(rollout)
    pairs = pl.read_parquet(pairs_file)
    device = resolve_device(stage.params.device)
    model, tokenizer = load_checkpoint(base, device)  # where the reference passes run; training moves it anyway
    pad = pad_id(tokenizer)
    inputs = [tasks_file, rollout, pairs_file, base]
    # What a run cut off keeps: named by everything that decides the training, so no other configuration reads it.
    kept = checkpoint_path(stage.name, stage.sections, inputs).with_suffix("")
    held = split_by_task([{"task_id": t} for t in pairs["task_id"].unique().sort()], p.holdout_share, p.seed)
    is_held = pl.col("task_id").is_in(held)

    # Warm-up: learn to read the critic's view first; the held-out tasks stay unseen, as for the pairs.
    # The warmed model is the critic's reference: kept, so that the ranking subtracts the same model. Every
    # process trains the critic from the kept copy (the main one alone holds the trained model). Its own
    # trainer (the warm-up's epochs and rate) names it, not the preference loss's rate and epochs.
    warmup, trainer = {}, p.model_copy(update={"epochs": p.warmup_epochs, "learning_rate": p.warmup_learning_rate})
    warming = {"trainer": trainer, "training": engine, "device": stage.params.device}
    warmed = checkpoint_path(f"{stage.name}-warmup", warming, inputs).with_suffix("")
    if p.warmup_epochs:
        if not (warmed / "result.json").is_file():
            chats = successful_chats(tasks, trajectories.filter(~is_held), p.warmup_min_reward, p.training_info)
            warm_up(model, tokenizer, chats, trainer, engine, stage.params.device, warmed)
        elif process_state().is_main_process:
            print(f"{stage.name}: the warm-up restored as an interrupted run finished it ({warmed})", file=sys.stderr)
        process_state().wait_for_everyone()
        model, _ = load_checkpoint(warmed / REFERENCE_DIR, device)
        warmup = json.loads((warmed / "result.json").read_text())

    # Pairs in the critic's view, with the start model's log-probs as the reference.
    read = partial(
        critic_pairs,
        model=model,
        tokenizer=tokenizer,
        tasks=tasks,
        trajectories=trajectories,
        p=p,
        engine=engine,
        pad=pad,
    )
    train, keys, dropped = read(pairs.filter(~is_held), keep=kept / "reference_train.pt")
    if train is None:
        raise InputError(
            f"{pairs_file}: no trajectory pair to train the critic on: {pairs.height} pairs in all, {dropped} longer "
            f"than the model's context of {context_length(tokenizer, model.config)} tokens (see `pairs` in params.yaml "
            "for what makes a pair)"
        )
    holdout, _, held_dropped = read(pairs.filter(is_held), keep=kept / "reference_holdout.pt")
    data = {
        "train_pairs": len(train.data.pairs),
        "holdout_pairs": len(holdout.data.pairs) if holdout else 0,
        "pairs_too_long": dropped + held_dropped,
        "train_tokens_per_epoch": train.data.tokens(),
        "training_info": p.training_info,
        "normalisation": "per turn" if p.per_turn else "per trajectory",
        **warmup,
    }

    # Training, then the checkpoint, the reference log-probs and the metrics.
    loss = PreferenceLoss(p.beta, p.length_normalize, p.nll_coef, p.nll_span, p.nll_mean)
    with live_report(stage.report_dir) as live:
        run = TrainRun(
            trainer=p,
            engine=engine,
            log_dir=live,
            name=f"critic {name}",
            device=stage.params.device,
            resume_dir=kept / "critic.training",
        )
        fitted = train_preference(model, train, loss, run=run, pad_id=pad, holdout=holdout)
        if fitted.model is None:  # not the main process
            return
        with stage.output(inputs, p.seed, metrics=False) as out:  # DVCLive writes its metrics
            save_checkpoint(fitted.model, tokenizer, out.dir, state_dict=fitted.state)
            if p.warmup_epochs:
                shutil.copytree(warmed / REFERENCE_DIR, out.dir / REFERENCE_DIR)
            reference = {"keys": keys, "sums": train.ref.sums, "counts": train.ref.counts}
            torch.save(reference, out.dir / "reference_logps.pt")
            config = {"critic": p.model_dump(mode="json"), "data": data, "training": fitted.summary}
            write_json(out.dir / "training_config.json", config)
            out.run["training"] = fitted.run
            out.devices["critic"] = placement(fitted.model)
        shutil.rmtree(kept, ignore_errors=True)
        metrics = json.loads((live / "metrics.json").read_text())
        accuracy = fitted.summary.get("eval_rewards/accuracies_final")  # DVCLive nests it under its slash
        drift = heldout_drift(stage.out, base, holdout, p, engine, pad, device)
        write_json(live / "metrics.json", {**metrics, **data, "heldout_accuracy": accuracy, **drift})
    print(json.dumps({"data": data, "training": {**fitted.summary, **fitted.run}}, indent=2))


def warm_up(model, tokenizer, chats: list, trainer: CriticParams, engine: TrainingParams, device, warmed: Path):
    """Fine-tune `model` on `chats` as `trainer` says (the warm-up's epochs and rate); the main process keeps it in
    `warmed`, whole or not at all: its checkpoint and what the critic's metrics report of it."""
    examples, _ = encode_chats(tokenizer, chats, context_length(tokenizer, model.config))
    log_dir = warmed.with_name(f"{warmed.name}.log")  # its summary goes into the critic's metrics
    resume_dir = warmed.with_name(f"{warmed.name}.training")
    run = TrainRun(trainer=trainer, engine=engine, log_dir=log_dir, name="sft", device=device, resume_dir=resume_dir)
    fitted = train_sft(model, examples, [], run=run, pad_id=pad_id(tokenizer))
    if fitted.model is None:  # not the main process
        return
    result = {"warmup_dialogues": len(examples), "warmup_loss_last_epoch": fitted.summary["train_loss_last_epoch"]}
    with written_whole(warmed) as staging:
        save_checkpoint(fitted.model, tokenizer, staging / REFERENCE_DIR, state_dict=fitted.state)
        write_json(staging / "result.json", result)
    shutil.rmtree(log_dir)


def heldout_drift(
    critic_dir: str, base: str, holdout: ScoredPairs | None, p: CriticParams, engine, pad: int, device
) -> dict:
    """The saved critic's mean per-token KL divergence from its reference over the agent turns of the
    held-out pairs' trajectories (the context segment of a dialogue NLL left out); {} without them."""
    if holdout is None:
        return {}
    critic, _ = load_checkpoint(critic_dir, device)
    reference, _ = load_checkpoint(critic_reference(critic_dir, base), device)
    turns = holdout.ref.num_segments - (p.nll_span == "dialogue")
    sequences = sorted({i for pair in holdout.data.pairs for i in pair})
    kl = mean_token_kl(
        critic, reference, [holdout.data.sequences[i] for i in sequences], forward_batch_size(p, engine), pad, turns
    )
    return {"heldout_kl_to_reference": round(kl, 5)}


def critic_pairs(
    part: pl.DataFrame,
    model,
    tokenizer,
    tasks: dict[str, dict],
    trajectories: pl.DataFrame,
    p: CriticParams,
    engine: TrainingParams,
    pad: int,
    keep: Path,
) -> tuple[ScoredPairs | None, list, int]:
    """The pairs of `part` in the critic's view, one segment per agent turn (or one for all), with
    `model`'s log-probs of their sequences as the reference (None: no pair fits), kept at `keep` for a rerun;
    their keys, and how many were too long."""
    scoring = "turns" if p.per_turn else "all"
    data, keys, dropped = trajectory_pair_data(
        tokenizer,
        tasks,
        trajectories,
        part,
        p.training_info,
        scoring,
        context_length(tokenizer, model.config),
    )
    if p.nll_span == "dialogue" and data.sequences:
        data = data.with_context_segment()
    if not data.sequences:
        return None, keys, dropped
    batch = forward_batch_size(p, engine)
    ref = kept_segment_logps(model, data.sequences, batch, pad, keep, desc="reference log-probs")
    return ScoredPairs(data, ref), keys, dropped


if __name__ == "__main__":
    run_stage(main)
