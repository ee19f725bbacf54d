"""Stage `critic@<domain>-<name>`: a SWEET-RL critic (docs/algorithm.md, step 3; sweetflow/rl/critic.py).

`python -m stages.critic DOMAIN NAME` reads params `critics.NAME`, the domain's training tasks (for each task's
reference solution, the training-time information), its offline rollouts, their trajectory pairs and its base
model, which the critic starts from and which is its reference (with `warmup_epochs`, the warmed-up model is both
instead, kept beside the critic for the ranking). Resumable: a run cut off keeps its warm-up, the reference's
log-probs and the training's state under `.sweetflow/checkpoints/`, and computes and trains only what is left.

Writes `models/DOMAIN/critics/NAME/` (the checkpoint; `reference/`, the warmed-up reference, with warm-up only;
`reference_logps.pt`, the reference's per-turn log-probs of the training sequences; `training_config.json`;
`manifest.json`) and `reports/DOMAIN/stages/critics/NAME/` (DVCLive `metrics.json` and curves, with the held-out
drift: NLL before and after, KL to the reference).
"""

from __future__ import annotations

import json
import shutil

import polars as pl

from sweetflow.core.artifacts import checkpoint_path, write_json
from sweetflow.core.errors import run_stage
from sweetflow.core.tables import PAIRS
from sweetflow.models.checkpoint import placement
from sweetflow.rl.critic import CriticTraining
from sweetflow.rl.loop import TrainRun, launch, live_report
from sweetflow.stage import begin


def main() -> None:
    stage = begin("critic", __doc__, item="critics")
    p, engine, device = stage.params.critics[stage.item], stage.params.training, stage.params.device
    launch(engine)
    (tasks_file, rollout), tasks = stage.offline_data()
    pairs_file, base = stage.upstream("trajectory_pairs", file=PAIRS), stage.upstream("base_model")
    inputs = [tasks_file, rollout, pairs_file, base]
    # What a run cut off keeps, named by everything that decides it; the warm-up by its own settings alone.
    kept = checkpoint_path(stage.name, stage.sections, inputs).with_suffix("")
    warming = {"trainer": CriticTraining.warmup_trainer(p), "training": engine, "device": device}
    warmed = checkpoint_path(f"{stage.name}-warmup", warming, inputs).with_suffix("")
    critic = CriticTraining(
        p, engine, device, tasks, pl.read_parquet(rollout), pl.read_parquet(pairs_file), base, kept, warmed
    )
    critic.prepare(stage.name, pairs_file)

    with live_report(stage.report_dir) as live:
        name = f"critic {stage.item}"
        run = TrainRun(
            trainer=p, engine=engine, log_dir=live, name=name, device=device, resume_dir=kept / "critic.training"
        )
        fitted = critic.fit(run)
        if fitted.model is None:  # not the main process
            return
        with stage.output(inputs, p.seed, metrics=False) as out:  # DVCLive writes its metrics
            critic.save(fitted, out.dir)
            config = {"critic": p.model_dump(mode="json"), "data": critic.data, "training": fitted.summary}
            write_json(out.dir / "training_config.json", config)
            out.run["training"] = fitted.run
            out.devices["critic"] = placement(fitted.model)
        shutil.rmtree(kept, ignore_errors=True)
        metrics = json.loads((live / "metrics.json").read_text())
        accuracy = fitted.summary.get("eval_rewards/accuracies_final")  # DVCLive nests it under its slash
        drift = critic.drift(stage.out)
        write_json(live / "metrics.json", {**metrics, **critic.data, "heldout_accuracy": accuracy, **drift})
    print(json.dumps({"data": critic.data, "training": {**fitted.summary, **fitted.run}}, indent=2))


if __name__ == "__main__":
    run_stage(main)
