"""A domain's base policy warm-started on the demonstrations (stage `base_model@<domain>`): the tiny
model built from scratch, or an external base read from a local checkpoint or GGUF file, fine-tuned
on every demonstration with the loss on the agent's turns, the demonstrations of a few held-out tasks
measuring the validation loss.

Every demonstration, not only the successful ones: the demonstrator asks about each hidden fact with
probability `skill`, and a base policy that imitates this mixed skill sometimes answers too early, as
a real base model does; SWEET-RL has something to fix. The tiny model's byte-level BPE tokenizer is
trained on the demonstrated training tasks and the demonstrations, and its chat template elides the
prompts at the turn limit the demonstrations record."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from sweetflow.core.params import ModelParams
from sweetflow.core.tables import turn_limit
from sweetflow.models.checkpoint import adapt_template, load_checkpoint, local_checkpoint, pad_id
from sweetflow.models.gguf import SUFFIX, read_gguf
from sweetflow.models.tiny import build_model, tokenizer_corpus, train_tokenizer
from sweetflow.rl.loop import Fitted, TrainRun
from sweetflow.rl.sft import demo_chats, encode_chats, split_by_task, train_sft


@dataclass
class Demonstrations:
    """The demonstrated training tasks and their demonstrations as chats of the policy's view."""

    tasks: list[dict]
    demos: list[dict]
    chats: list[list[dict]]
    max_turns: int  # the turn limit the demonstrations record: the tiny model's chat template elides its prompts

    @classmethod
    def read(cls, train_tasks: list[dict], demos_file: str) -> Demonstrations:
        frame = pl.read_parquet(demos_file, columns=["task_id", "seed", "dialogue", "max_turns"])
        demos = frame.to_dicts()
        # The demonstrated tasks only: a larger task pool for the offline data (demos.max_tasks) leaves the
        # tokenizer, the held-out split and so the base model as they are.
        demonstrated = {d["task_id"] for d in demos}
        tasks = [t for t in train_tasks if t["task_id"] in demonstrated]
        return cls(tasks, demos, demo_chats(tasks, demos), turn_limit(frame, demos_file))


def tiny_base(p: ModelParams, shown: Demonstrations):
    """The tiny Llama and its tokenizer, built from the demonstrations (`model.base: tiny`)."""
    corpus = tokenizer_corpus(shown.tasks, shown.chats, shown.max_turns)
    tokenizer = train_tokenizer(corpus, p.vocab_size, shown.max_turns, p.max_length, p.pre_tokenizer)
    model = build_model(tokenizer, p.hidden_size, p.layers, p.heads, p.max_length, p.seed, p.intermediate_size)
    return model, tokenizer


def external_base(p: ModelParams, key: str, date: str):
    """The model of `model.base` (a GGUF file or a local checkpoint directory, named `key` in errors), its
    tokenizer with a chat template one training can use, and the record of that template."""
    if p.base.endswith(SUFFIX):
        source = Path(p.base)
        model, tokenizer = read_gguf(source)
        _, record = adapt_template(tokenizer, f"{key} ({source})", date)
        return model, tokenizer, record
    adopted = local_checkpoint(p.base, key, date)
    model, tokenizer = load_checkpoint(adopted.path, dtype="float32")  # master weights; precision is the trainer's
    tokenizer.chat_template = adopted.template
    return model, tokenizer, adopted.record


def warm_start(model, tokenizer, shown: Demonstrations, p: ModelParams, run: TrainRun) -> tuple[Fitted, dict]:
    """`model` fine-tuned on every demonstration but the held-out tasks' (`model.holdout_share`), whose
    loss is the validation loss; and the data's counts."""
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
    return train_sft(model, train, holdout, run=run, pad_id=pad_id(tokenizer)), data
