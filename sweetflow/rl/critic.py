"""A SWEET-RL critic's training (docs/algorithm.md, step 3), what stage `critic@<domain>-<name>` runs.

The critic starts from the base model. With `warmup_epochs` it first fine-tunes on the successful rollouts in its
own view (the reference solution in the system message, unless `training_info` is off: the ablation), and that
warmed-up model is its start and its reference instead. Each trajectory of a pair is read in the critic's view,
each agent turn one segment: the critic's advantage of a turn is its length-normalised log-ratio against its
reference, and the Bradley–Terry loss compares the sums over the turns of the chosen and the rejected trajectory
(`sweetflow.rl.preference`, the policies' preference path). The pairs of a few held-out tasks measure how often
the critic prefers the better trajectory and how far it drifted as a language model: its NLL of their turns before
and after, and its mean per-token KL divergence from its reference there (`heldout_kl_to_reference`).

What a run cut off keeps: the warm-up once it ends (under a name of the warm-up's own settings, so that the same
critic at another learning rate reads it), the reference's log-probs as far as they were computed and the
training's state (`TrainRun.save_every_s`), each under `.sweetflow/checkpoints/`.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import polars as pl
import torch

from sweetflow.core.artifacts import write_json, written_whole
from sweetflow.core.errors import InputError
from sweetflow.core.params import CriticParams, TrainingParams
from sweetflow.models.checkpoint import load_checkpoint, pad_id, resolve_device, save_checkpoint
from sweetflow.rl.drift import mean_token_kl
from sweetflow.rl.logprobs import kept_segment_logps
from sweetflow.rl.loop import Fitted, TrainRun, forward_batch_size, process_state
from sweetflow.rl.loss import PreferenceLoss
from sweetflow.rl.preference import ScoredPairs, train_preference
from sweetflow.rl.ranking import REFERENCE_DIR, critic_reference
from sweetflow.rl.sequences import context_length, successful_chats, trajectory_pair_data
from sweetflow.rl.sft import encode_chats, split_by_task, train_sft

REFERENCE_LOGPS = "reference_logps.pt"


class CriticTraining:
    """One critic: its warm-up (`prepare`, which also reads the pairs in its view against its reference), its
    training (`fit`) and its drift (`drift`). `kept` holds what this configuration's run keeps, `warmed` the warm-up
    (named by the warm-up's settings alone)."""

    def __init__(
        self,
        p: CriticParams,
        engine: TrainingParams,
        device: str,
        tasks: dict[str, dict],
        trajectories: pl.DataFrame,
        pairs: pl.DataFrame,
        base: str,
        kept: Path,
        warmed: Path,
    ):
        self.p, self.engine, self.tasks, self.trajectories = p, engine, tasks, trajectories
        self.pairs, self.base, self.kept, self.warmed = pairs, base, kept, warmed
        self.device, self.placed = device, resolve_device(device)  # params `device`, and where the models go
        self.model, self.tokenizer = load_checkpoint(base, self.placed)  # where the reference passes run
        self.pad = pad_id(self.tokenizer)
        held = split_by_task([{"task_id": t} for t in pairs["task_id"].unique().sort()], p.holdout_share, p.seed)
        self.is_held = pl.col("task_id").is_in(held)
        self.data: dict = {}  # the counts the manifest and the metrics record

    @staticmethod
    def warmup_trainer(p: CriticParams) -> CriticParams:
        """The warm-up's own trainer: its epochs and learning rate, not the preference loss's."""
        return p.model_copy(update={"epochs": p.warmup_epochs, "learning_rate": p.warmup_learning_rate})

    def prepare(self, name: str, pairs_file: str) -> None:
        """The warm-up (trained, or read where a run kept it), then the pairs of the training and the held-out
        tasks in the critic's view, with the start model's log-probs as the reference."""
        warmup = self._warm_up(name) if self.p.warmup_epochs else {}
        self.train, self.keys, dropped = self._pairs(self.pairs.filter(~self.is_held), "reference_train.pt")
        if self.train is None:
            context = context_length(self.tokenizer, self.model.config)
            raise InputError(
                f"{pairs_file}: no trajectory pair to train the critic on: {self.pairs.height} pairs in all, "
                f"{dropped} longer than the model's context of {context} tokens (see `pairs` in params.yaml for what "
                "makes a pair)"
            )
        self.holdout, _, held_dropped = self._pairs(self.pairs.filter(self.is_held), "reference_holdout.pt")
        self.data = {
            "train_pairs": len(self.train.data.pairs),
            "holdout_pairs": len(self.holdout.data.pairs) if self.holdout else 0,
            "pairs_too_long": dropped + held_dropped,
            "train_tokens_per_epoch": self.train.data.tokens(),
            "training_info": self.p.training_info,
            "normalisation": "per turn" if self.p.per_turn else "per trajectory",
            **warmup,
        }

    def fit(self, run: TrainRun) -> Fitted:
        p = self.p
        loss = PreferenceLoss(p.beta, p.length_normalize, p.nll_coef, p.nll_span, p.nll_mean)
        return train_preference(self.model, self.train, loss, run=run, pad_id=self.pad, holdout=self.holdout)

    def save(self, fitted: Fitted, out: Path) -> None:
        """The checkpoint, the warmed-up reference beside it, and the reference's log-probs of the training pairs."""
        save_checkpoint(fitted.model, self.tokenizer, out, state_dict=fitted.state)
        if self.p.warmup_epochs:
            shutil.copytree(self.warmed / REFERENCE_DIR, out / REFERENCE_DIR)
        reference = {"keys": self.keys, "sums": self.train.ref.sums, "counts": self.train.ref.counts}
        torch.save(reference, out / REFERENCE_LOGPS)

    def drift(self, critic_dir: str) -> dict:
        """The saved critic's mean per-token KL divergence from its reference over the agent turns of the held-out
        pairs' trajectories (the context segment of a dialogue NLL left out); {} without them."""
        if self.holdout is None:
            return {}
        critic, _ = load_checkpoint(critic_dir, self.placed)
        reference, _ = load_checkpoint(critic_reference(critic_dir, self.base), self.placed)
        turns = self.holdout.ref.num_segments - (self.p.nll_span == "dialogue")
        sequences = sorted({i for pair in self.holdout.data.pairs for i in pair})
        batch = forward_batch_size(self.p, self.engine)
        kl = mean_token_kl(
            critic, reference, [self.holdout.data.sequences[i] for i in sequences], batch, self.pad, turns
        )
        return {"heldout_kl_to_reference": round(kl, 5)}

    def _warm_up(self, name: str) -> dict:
        """Fine-tune on the successful rollouts of the training tasks in the critic's view (the held-out tasks stay
        unseen, as for the pairs), kept whole or not at all; every process then starts from the kept copy (the main
        one alone holds the trained model). What the critic's metrics report of it."""
        if not (self.warmed / "result.json").is_file():
            chats = successful_chats(
                self.tasks, self.trajectories.filter(~self.is_held), self.p.warmup_min_reward, self.p.training_info
            )
            examples, _ = encode_chats(self.tokenizer, chats, context_length(self.tokenizer, self.model.config))
            log_dir = self.warmed.with_name(f"{self.warmed.name}.log")
            run = TrainRun(
                trainer=self.warmup_trainer(self.p),
                engine=self.engine,
                log_dir=log_dir,
                name="sft",
                device=self.device,
                resume_dir=self.warmed.with_name(f"{self.warmed.name}.training"),
            )
            fitted = train_sft(self.model, examples, [], run=run, pad_id=self.pad)
            if fitted.model is not None:  # the main process
                result = {
                    "warmup_dialogues": len(examples),
                    "warmup_loss_last_epoch": fitted.summary["train_loss_last_epoch"],
                }
                with written_whole(self.warmed) as staging:
                    save_checkpoint(fitted.model, self.tokenizer, staging / REFERENCE_DIR, state_dict=fitted.state)
                    write_json(staging / "result.json", result)
                shutil.rmtree(log_dir)
        elif process_state().is_main_process:
            print(f"{name}: the warm-up restored as an interrupted run finished it ({self.warmed})", file=sys.stderr)
        process_state().wait_for_everyone()
        self.model, _ = load_checkpoint(self.warmed / REFERENCE_DIR, self.placed)
        return json.loads((self.warmed / "result.json").read_text())

    def _pairs(self, part: pl.DataFrame, keep: str) -> tuple[ScoredPairs | None, list, int]:
        """The pairs of `part` in the critic's view, one segment per agent turn (or one for all), with the start
        model's log-probs as the reference (None: no pair fits), kept under `keep` for a rerun; their keys, and how
        many were too long."""
        p = self.p
        data, keys, dropped = trajectory_pair_data(
            self.tokenizer,
            self.tasks,
            self.trajectories,
            part,
            p.training_info,
            "turns" if p.per_turn else "all",
            context_length(self.tokenizer, self.model.config),
        )
        if p.nll_span == "dialogue" and data.sequences:
            data = data.with_context_segment()
        if not data.sequences:
            return None, keys, dropped
        batch = forward_batch_size(p, self.engine)
        ref = kept_segment_logps(
            self.model, data.sequences, batch, self.pad, self.kept / keep, desc="reference log-probs"
        )
        return ScoredPairs(data, ref), keys, dropped
