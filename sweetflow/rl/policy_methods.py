"""What a policy-training method is to stage `policy`: each method is a folder of sweetflow/rl/methods/,
named as the method, whose `training.py` has `training_data(p, source)`: it reads the data the method
learns from and gives back its `Training` (what it read, its data counts, and its objective for one
seed's run) (docs/architecture.md, Training methods: one folder each)."""

from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from sweetflow.core.errors import InputError
from sweetflow.core.params import PolicyParams, TrainingParams
from sweetflow.models.checkpoint import load_checkpoint, pad_id, resolve_device
from sweetflow.rl.logprobs import kept_segment_logps, save_segment_logps
from sweetflow.rl.loop import Fitted, TrainRun, forward_batch_size
from sweetflow.rl.loss import PreferenceLoss
from sweetflow.rl.preference import ScoredPairs, train_preference
from sweetflow.rl.sequences import PairData, context_length
from sweetflow.rl.sft import Example, train_sft

REFERENCE = "reference_logps.pt"


@dataclass(frozen=True)
class Source:
    """What every method may train on: the domain's training tasks and offline trajectories, and the
    base model (the reference of the preference methods) with its tokenizer."""

    domain: str
    tasks: dict[str, dict]  # the training tasks by task_id
    trajectories: pl.DataFrame  # the offline rollout
    rollout: str  # where the trajectories were read (messages name it)
    base: object  # the base model, on the reference pass's device
    tokenizer: object
    pad_id: int
    max_length: int  # the context: longer sequences are cut or dropped
    engine: TrainingParams
    upstream: Callable[..., str]  # the stage's `upstream`: where another stage's output is, by its producer's name

    @classmethod
    def read(
        cls, domain: str, tasks: dict[str, dict], rollout: str, base_dir: str, device: str, engine, upstream
    ) -> Source:
        """The source of a stage: the rollout read, the base model loaded on `device` (params `device`)."""
        base, tokenizer = load_checkpoint(base_dir, resolve_device(device))  # the reference pass's device
        return cls(
            domain=domain,
            tasks=tasks,
            trajectories=pl.read_parquet(rollout),
            rollout=rollout,
            base=base,
            tokenizer=tokenizer,
            pad_id=pad_id(tokenizer),
            max_length=context_length(tokenizer, base.config),
            engine=engine,
            upstream=upstream,
        )


class Training(ABC):
    """One method's data, read once, and its objective, run once per seed on a fresh base model."""

    def __init__(self, inputs: list[str], data: dict[str, int]):
        self.inputs = inputs  # the files it read besides the tasks, the rollout and the base model
        self.data = data  # its counts, recorded in the manifest and the metrics

    @abstractmethod
    def run_name(self, policy: str, seed: int) -> str:
        """The name of one seed's run (progress bar, tracker, errors)."""

    @abstractmethod
    def fit(self, model, run: TrainRun, pad_id: int) -> Fitted:
        """Train `model` for one seed's run."""

    def prepare(self, keep: Path) -> None:
        """Compute what every seed's run shares (nothing, unless the method says so), kept in directory `keep`
        so that a stage started again after a kill reads it there instead of computing it again."""

    def shares(self) -> dict[str, object]:
        """What decides the work `prepare` does besides the inputs, the base model and where it runs (names
        `keep`): nothing, unless the method says so."""
        return {}

    def save(self, out: Path) -> None:
        """Write what the method keeps beside the checkpoints (nothing, unless it says so)."""


class SftTraining(Training):
    """Supervised fine-tuning on whole dialogues."""

    def __init__(self, inputs: list[str], data: dict[str, int], examples: list[Example]):
        super().__init__(inputs, data)
        self.examples = examples

    def run_name(self, policy: str, seed: int) -> str:
        return "sft"

    def fit(self, model, run: TrainRun, pad_id: int) -> Fitted:
        return train_sft(model, self.examples, [], run=run, pad_id=pad_id)


class PreferenceTraining(Training):
    """The preference loss (sweetflow.rl.loss) on pairs of segmented sequences, against the base
    model's log-probs of them, computed once for every seed (`prepare`) and kept as reference_logps.pt."""

    def __init__(self, p: PolicyParams, source: Source, inputs: list[str], pair_data: PairData, dropped: int):
        if not pair_data.pairs:
            raise InputError(f"{inputs[-1]}: no preference pair to train on")
        if p.nll_span == "dialogue":
            pair_data = pair_data.with_context_segment()
        data = {
            "train_pairs": len(pair_data.pairs),
            "pairs_too_long": dropped,
            "train_tokens_per_epoch": pair_data.tokens(),
        }
        super().__init__(inputs, data)
        self.p, self.source, self.pair_data = p, source, pair_data
        self.batch = forward_batch_size(p, source.engine)  # of the reference pass
        self.pairs: ScoredPairs | None = None  # with the reference's log-probs, once prepared

    def prepare(self, keep: Path) -> None:
        sequences, base, pad_id = self.pair_data.sequences, self.source.base, self.source.pad_id
        ref = kept_segment_logps(base, sequences, self.batch, pad_id, keep / REFERENCE, desc="reference log-probs")
        self.pairs, self.source = ScoredPairs(self.pair_data, ref), None  # the base model is no longer needed

    def shares(self) -> dict[str, object]:
        # The sequences themselves and the batch that reads them, not the settings that made them: a tuning's
        # learning rates and epochs read the same sequences, so they share one reference pass.
        digest = hashlib.sha256()
        for s in self.pair_data.sequences:
            digest.update(json.dumps([s.input_ids, s.segment_ids]).encode() + b"\n")
        return {"sequences": digest.hexdigest(), "batch": self.batch}

    def run_name(self, policy: str, seed: int) -> str:
        return f"{policy} seed {seed}"

    def fit(self, model, run: TrainRun, pad_id: int) -> Fitted:
        loss = PreferenceLoss(self.p.beta, self.p.length_normalize, self.p.nll_coef, self.p.nll_span, self.p.nll_mean)
        return train_preference(model, self.pairs, loss, run=run, pad_id=pad_id)

    def save(self, out: Path) -> None:
        save_segment_logps(self.pairs.ref, out / REFERENCE)
