"""A policy trained at each seed of `seeds`, every seed from a fresh copy of the base model, and the seeds a run has
finished kept until the stage's output holds them all (stage `policy@<domain>-<name>`): on a real model each seed's
training takes hours on a CPU, and a stage cut off at its third seed would otherwise train the first two again."""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from sweetflow.core.artifacts import write_json, written_whole
from sweetflow.core.params import PolicyParams, TrainingParams
from sweetflow.models.checkpoint import load_checkpoint, placement, save_checkpoint
from sweetflow.rl.loop import Fitted, TrainRun, process_state
from sweetflow.rl.policy_methods import Training


def train_seeds(
    training: Training,
    p: PolicyParams,
    base_dir: str,
    finished: FinishedSeeds,
    live: Path,
    *,
    tokenizer,
    pad: int,
    engine: TrainingParams,
    seeds: list[int],
    device: str,
    policy: str,
    stage: str,
) -> dict[str, FinishedSeed] | None:
    """Every seed the run has not finished, trained (`p.seed + seed`) from a fresh copy of the base model at `base_dir`
    and kept in `finished`, its curves under `live`; then every seed by its name, or None in a process other than the
    main one (under `accelerate launch` every process trains, the main one alone keeps the seeds)."""
    main_process = process_state().is_main_process
    for seed in seeds:
        if finished.get(seed) is not None:
            if main_process:
                print(f"{stage}: seed {seed} restored as an interrupted run finished it", file=sys.stderr)
            continue
        model, _ = load_checkpoint(base_dir)
        seed_live = live / f".seed{seed}"
        run = TrainRun(
            trainer=p.model_copy(update={"seed": p.seed + seed}),
            engine=engine,
            log_dir=seed_live,
            name=training.run_name(policy, seed),
            device=device,
            resume_dir=finished.training(seed),
        )
        fitted = training.fit(model, run, pad)
        if main_process:
            finished.keep(seed, fitted, tokenizer, seed_live / "plots")
            shutil.rmtree(seed_live)
    return {str(seed): finished.get(seed) for seed in seeds} if main_process else None


CHECKPOINT, PLOTS, RESULT = "checkpoint", "plots", "result.json"


@dataclass(frozen=True)
class FinishedSeed:
    directory: Path
    summary: dict  # what the run learnt: the stage's metrics
    run: dict  # how it ran (batch layout, seconds, tokens a second): the stage's run record
    devices: dict  # where the trained model was: the manifest's `devices`

    @property
    def checkpoint(self) -> Path:
        return self.directory / CHECKPOINT

    @property
    def plots(self) -> Path:
        return self.directory / PLOTS


class FinishedSeeds:
    """The seeds a run of the stage has finished, kept outside its output until the output holds them all; the seed
    being trained keeps its state beside them (`training`). The directory is
    named by everything that decides the training (`checkpoint_path`: the params sections and the inputs'
    hashes), so a changed configuration never resumes from another's seeds; a seed appears in it only whole."""

    def __init__(self, directory: Path | str):
        self.directory = Path(directory)

    def get(self, seed: int) -> FinishedSeed | None:
        """Seed `seed` as an earlier, interrupted run of the same stage finished it; None if it did not."""
        directory = self.directory / f"seed{seed}"
        if not (directory / RESULT).is_file():
            return None
        return FinishedSeed(directory, **json.loads((directory / RESULT).read_text()))

    def training(self, seed: int) -> Path:
        """Where seed `seed`'s run keeps its state while it trains."""
        return self.directory / f"seed{seed}.training"

    def keep(self, seed: int, fitted: Fitted, tokenizer, plots: Path) -> FinishedSeed:
        """Keep a seed just trained: its checkpoint, its summary and its curves (`plots`, moved); a kill leaves
        the whole seed or none."""
        directory = self.directory / f"seed{seed}"
        result = {"summary": fitted.summary, "run": fitted.run, "devices": placement(fitted.model)}
        with written_whole(directory) as staging:
            save_checkpoint(fitted.model, tokenizer, staging / CHECKPOINT, state_dict=fitted.state)
            shutil.move(plots, staging / PLOTS)
            write_json(staging / RESULT, result)
        return FinishedSeed(directory, **result)

    def clear(self) -> None:
        """Once the stage's output holds every seed."""
        shutil.rmtree(self.directory, ignore_errors=True)
