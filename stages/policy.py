"""Stage `policy@<domain>-<name>`: a trained policy, one checkpoint per seed of `seeds` (docs/algorithm.md,
step 7 and the paper's baselines). Every method starts from the domain's base model and trains on
its own view of the dialogue (no training-time information); each is a module of
sweetflow/rl/methods/ (`rft`, `mtdpo`, `sweet`), which reads its data and runs its objective.

`python -m stages.policy DOMAIN NAME` reads params `policies.NAME` and `seeds`, and the data its
method needs. The data are read, and the base model's log-probs of them computed, once for all
seeds. Resumable: a run cut off keeps the seeds it finished (`FinishedSeeds`), the base model's
log-probs as far as it computed them and the state of the seed it was training (both saved every
`TrainRun.save_every_s`), and trains only what is left. The base model's log-probs stay kept after the
stage, for a run of the same policy at other seeds. Writes `models/DOMAIN/policies/NAME/`
(`seed<k>/`: a checkpoint per seed; what the method keeps beside them, `reference_logps.pt` for the
preference methods; `manifest.json`) and `reports/DOMAIN/stages/policies/NAME/` (`metrics.json`: data
counts and each seed's training summary; `plots/seed<k>/`: DVCLive curves).
"""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from stages._common import begin
from sweetflow.core.artifacts import checkpoint_path, write_json, written_whole
from sweetflow.core.errors import InputError, run_stage
from sweetflow.core.tables import TRAJECTORIES, read_tasks, task_file
from sweetflow.models.checkpoint import load_checkpoint, pad_id, placement, resolve_device, save_checkpoint
from sweetflow.rl.loop import Fitted, TrainRun, launch, live_report, process_state
from sweetflow.rl.policy_methods import Source, load_methods
from sweetflow.rl.sequences import context_length


def main() -> None:
    methods = load_methods()  # before params are read: a method's module may define its params class
    stage = begin("policy", __doc__, item="policies")
    domain, name, params = stage.domain, stage.item, stage.params
    p, engine = params.policies[name], params.training
    if p.method not in methods:
        raise InputError(f"policies.{name}.method {p.method!r}: no module sweetflow/rl/methods/{p.method}.py")
    launch(engine)

    tasks_file, rollout = stage.upstream("tasks", file=task_file("train")), stage.upstream("rollout", file=TRAJECTORIES)
    base_dir = stage.upstream("base_model")
    tasks = {t["task_id"]: t for t in read_tasks(domain, "train")}
    trajectories = pl.read_parquet(rollout)
    base, tokenizer = load_checkpoint(base_dir, resolve_device(params.device))  # the reference pass's device
    pad = pad_id(tokenizer)
    source = Source(
        domain=domain,
        tasks=tasks,
        trajectories=trajectories,
        rollout=rollout,
        base=base,
        tokenizer=tokenizer,
        pad_id=pad,
        max_length=context_length(tokenizer, base.config),
        engine=engine,
        upstream=stage.upstream,
    )
    training = methods[p.method].training_data(p, source)
    inputs = [tasks_file, rollout, base_dir, *training.inputs]
    # Each seed, once trained, is kept until the output holds them all: a stage cut off resumes at its next seed,
    # or inside the seed it was training. Under `accelerate launch` every process trains; the main one alone keeps
    # the seeds and writes the output.
    finished = FinishedSeeds(checkpoint_path(stage.name, stage.sections, inputs).with_suffix(""))
    # What every seed shares is named by all but `seeds` and outlives the stage (a preference method's reference
    # log-probs, a few numbers a sequence and up to hours on a CPU): a run of the same policy at other seeds, such
    # as an experiment's next point (sweetflow/points.py), reads it instead of computing it again.
    shared = {key: value for key, value in stage.sections.items() if key != "seeds"}
    training.prepare(checkpoint_path(f"{stage.name}-shared", shared, inputs).with_suffix(""))
    del base, source  # each seed starts from a fresh copy
    main_process = process_state().is_main_process
    with live_report(stage.report_dir) as live:
        for seed in params.seeds:
            if finished.get(seed) is not None:
                if main_process:
                    print(f"{stage.name}: seed {seed} restored as an interrupted run finished it", file=sys.stderr)
                continue
            trainer = p.model_copy(update={"seed": p.seed + seed})
            model, _ = load_checkpoint(base_dir)
            seed_live = live / f".seed{seed}"
            run = TrainRun(
                trainer=trainer,
                engine=engine,
                log_dir=seed_live,
                name=training.run_name(name, seed),
                device=params.device,
                resume_dir=finished.training(seed),
            )
            fitted = training.fit(model, run, pad)
            if main_process:
                finished.keep(seed, fitted, tokenizer, seed_live / "plots")
                shutil.rmtree(seed_live)
        if not main_process:
            return
        kept = {str(seed): finished.get(seed) for seed in params.seeds}
        with stage.output(inputs, p.seed, metrics=False) as out:  # DVCLive wrote the curves; the metrics are below
            for seed, seed_kept in kept.items():
                shutil.copytree(seed_kept.checkpoint, out.dir / f"seed{seed}")
                shutil.copytree(seed_kept.plots, live / "plots" / f"seed{seed}")
                out.devices["policy"] = seed_kept.devices
            training.save(out.dir)
            config = {"policy": p.model_dump(mode="json"), "seeds": params.seeds, "data": training.data}
            write_json(out.dir / "training_config.json", config)
            summaries = {seed: k.summary for seed, k in kept.items()}
            runs = out.run["training"] = {seed: k.run for seed, k in kept.items()}
            write_json(live / "metrics.json", {"method": p.method, "data": training.data, "seeds": summaries})
    finished.clear()
    print(json.dumps({"data": training.data, "seeds": summaries, "run": runs}, indent=2))


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
    """The seeds a run of the stage has finished, kept outside its output until the output holds them all: on a
    real model each seed's training takes hours on a CPU, and a stage cut off at its third seed would otherwise
    train the first two again. The seed being trained keeps its state beside them (`training`). The directory is
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


if __name__ == "__main__":
    run_stage(main)
