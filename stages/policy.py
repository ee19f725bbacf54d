"""Stage `policy@<domain>-<name>`: a trained policy, one checkpoint per seed of `seeds` (docs/algorithm.md,
step 7 and the paper's baselines). Every method starts from the domain's base model and trains on
its own view of the dialogue (no training-time information); each is a folder of
sweetflow/rl/methods/ (`rft`, `mtdpo`, `sweet`): its knobs, and the data it reads for its objective.

`python -m stages.policy DOMAIN NAME` reads params `policies.NAME` and `seeds`, and the data its
method needs. The data are read, and the base model's log-probs of them computed, once for all
seeds. Resumable: a run cut off keeps the seeds it finished (sweetflow/rl/seeds.py), the base model's
log-probs as far as it computed them and the state of the seed it was training (both saved every
`TrainRun.save_every_s`), and trains only what is left. The base model's log-probs stay kept after the
stage, for a run of the same policy at other seeds or other training settings. Writes `models/DOMAIN/policies/NAME/`
(`seed<k>/`: a checkpoint per seed; what the method keeps beside them, `reference_logps.pt` for the
preference methods; `manifest.json`) and `reports/DOMAIN/stages/policies/NAME/` (`metrics.json`: data
counts and each seed's training summary; `plots/seed<k>/`: DVCLive curves).
"""

from __future__ import annotations

import dataclasses
import json
import shutil

from sweetflow.core.artifacts import checkpoint_path, write_json
from sweetflow.core.errors import run_stage
from sweetflow.rl.loop import launch, live_report
from sweetflow.rl.methods import registry
from sweetflow.rl.policy_methods import Source
from sweetflow.rl.seeds import FinishedSeeds, train_seeds
from sweetflow.stage import begin


def main() -> None:
    stage = begin("policy", __doc__, item="policies")
    stage = dataclasses.replace(stage, params=registry.resolve(stage.params))  # the policy's entry by its method
    domain, name, params = stage.domain, stage.item, stage.params
    p, engine = params.policies[name], params.training
    launch(engine)

    (tasks_file, rollout), tasks = stage.offline_data()
    base_dir = stage.upstream("base_model")
    source = Source.read(domain, tasks, rollout, base_dir, params.device, engine, stage.upstream)
    training = registry.training(p.method).training_data(p, source)
    inputs = [tasks_file, rollout, base_dir, *training.inputs]
    # Each seed, once trained, is kept until the output holds them all: a stage cut off resumes at its next seed,
    # or inside the seed it was training.
    finished = FinishedSeeds(checkpoint_path(stage.name, stage.sections, inputs).with_suffix(""))
    # What every seed shares outlives the stage (a preference method's reference log-probs, a few numbers a
    # sequence and up to hours on a CPU), named by what decides it: the inputs, where and how the base model runs,
    # and what the method says (`Training.shares`), not the policy's training settings. A run of the same policy
    # at other seeds (an experiment's next point, sweetflow/points.py) or at another learning rate (a tuning's
    # next trial) reads it instead of computing it again.
    shared = {key: stage.sections[key] for key in ("device", "reproducibility", "training")} | training.shares()
    training.prepare(checkpoint_path(f"{stage.name}-shared", shared, inputs).with_suffix(""))
    run = {"tokenizer": source.tokenizer, "pad": source.pad_id, "engine": engine, "seeds": params.seeds}
    del source  # and its base model: each seed starts from a fresh copy
    with live_report(stage.report_dir) as live:
        where = {"device": params.device, "policy": name, "stage": stage.name}
        kept = train_seeds(training, p, base_dir, finished, live, **run, **where)
        if kept is None:  # not the main process: it only took part in training
            return
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


if __name__ == "__main__":
    run_stage(main)
