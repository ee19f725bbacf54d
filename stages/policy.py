"""Stage `policy@<domain>-<name>`: a trained policy, one checkpoint per seed of `seeds` (docs/algorithm.md,
step 7 and the paper's baselines). Every method starts from the domain's base model and trains on
its own view of the dialogue (no training-time information); each is a module of
sweetflow/rl/methods/ (`rft`, `mtdpo`, `sweet`), which reads its data and runs its objective.

`python -m stages.policy DOMAIN NAME` reads params `policies.NAME` and `seeds`, and the data its
method needs. The data are read, and the base model's log-probs of them computed, once for all
seeds. Writes `models/DOMAIN/policies/NAME/` (`seed<k>/`: a checkpoint per seed; what the method
keeps beside them, `reference_logps.pt` for the preference methods; `manifest.json`) and
`reports/DOMAIN/stages/policies/NAME/` (`metrics.json`: data counts and each seed's training
summary; `plots/seed<k>/`: DVCLive curves).
"""

from __future__ import annotations

import json
import os
import shutil

import polars as pl

from stages._common import begin
from sweetflow.core.artifacts import write_json
from sweetflow.core.errors import InputError, run_stage
from sweetflow.core.tables import TRAJECTORIES, read_tasks, task_file
from sweetflow.models.checkpoint import load_checkpoint, pad_id, placement, resolve_device, save_checkpoint
from sweetflow.rl.loop import TrainRun, launch, live_report
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
    del base, source  # each seed starts from a fresh copy

    summaries, runs = {}, {}
    with (
        live_report(stage.report_dir) as live,
        stage.output(inputs, p.seed, metrics=False) as out,  # DVCLive writes its metrics
    ):
        for seed in params.seeds:
            trainer = p.model_copy(update={"seed": p.seed + seed})
            model, _ = load_checkpoint(base_dir)
            seed_live = live / f".seed{seed}"
            run = TrainRun(
                trainer=trainer,
                engine=engine,
                log_dir=seed_live,
                name=training.run_name(name, seed),
                device=params.device,
            )
            fitted = training.fit(model, run, pad)
            if fitted.model is None:  # not the main process
                continue
            save_checkpoint(fitted.model, tokenizer, out.dir / f"seed{seed}", state_dict=fitted.state)
            summaries[str(seed)], runs[str(seed)] = fitted.summary, fitted.run
            out.devices["policy"] = placement(fitted.model)
            (live / "plots").mkdir(parents=True, exist_ok=True)
            os.replace(seed_live / "plots", live / "plots" / f"seed{seed}")
            shutil.rmtree(seed_live)
        training.save(out.dir)
        config = {"policy": p.model_dump(mode="json"), "seeds": params.seeds, "data": training.data}
        write_json(out.dir / "training_config.json", config)
        write_json(live / "metrics.json", {"method": p.method, "data": training.data, "seeds": summaries})
        out.run["training"] = runs
    print(json.dumps({"data": training.data, "seeds": summaries, "run": runs}, indent=2))


if __name__ == "__main__":
    run_stage(main)
