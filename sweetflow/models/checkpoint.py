"""Local Hugging Face checkpoints: finding them, loading them offline, copying them into a stage output.

Nothing is ever downloaded: every load passes `local_files_only=True`, and a model name that is not
a local directory (a hub id such as `meta-llama/Llama-3.1-8B-Instruct`) is an input error that says
how to get the files.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from sweetflow.artifacts import NOT_DATA
from sweetflow.errors import InputError
from sweetflow.models.assistant_masks import check_template


def local_checkpoint(name: str, key: str = "model.base") -> Path:
    """The directory `name` if it is a Hugging Face checkpoint with a chat template; else an
    InputError naming the params `key`."""
    path = Path(name).expanduser()
    if not path.is_dir():
        raise InputError(
            f"{key}: {name!r} is neither 'tiny' nor a local directory. Nothing is downloaded at run time: "
            f"fetch the checkpoint on a machine with network access (e.g. `hf download {name} --local-dir "
            f"/models/{name.split('/')[-1]}`) and set {key} to that directory."
        )
    if not (path / "config.json").is_file():
        raise InputError(f"{key}: {path} has no config.json; it is not a Hugging Face checkpoint directory")
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    if not tokenizer.chat_template:
        raise InputError(f"{key}: the tokenizer in {path} has no chat template; the policy needs an instruct model")
    check_template(tokenizer, f"{key} ({path})")  # before hours of rollouts, not at the first training stage
    return path


def load_checkpoint(path: Path | str, device: str | torch.device = "cpu", dtype: str = "auto"):
    """(model, tokenizer) from a local checkpoint directory, in eval mode, in `dtype` (auto: the
    checkpoint's own).
    A chat template whose agent turns cannot be told apart is a TemplateError here, before any use."""
    path = Path(path)
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"{path}: not a checkpoint directory (no config.json)")
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    check_template(tokenizer, str(path))
    model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True, dtype=dtype).to(device)
    return model.eval(), tokenizer


def pad_id(tokenizer) -> int:
    """The id that pads a batch: the tokenizer's pad token, else its end-of-sequence token (Llama 3
    has no pad token; padding is masked out of attention and of every loss, so any id will do)."""
    return tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id


def link_or_copy_tree(src: Path, dest: Path) -> str:
    """Fill `dest` with the files of `src`: hard links where the filesystem allows (a 16 GB
    checkpoint costs no space and no time), copies otherwise. Returns "hardlink" or "copy".

    A source that is itself a stage output keeps its manifest: `dest` gets its own, and writing
    it through a hard link would rewrite the source's."""
    how = "hardlink"
    for file in sorted(p for p in src.rglob("*") if p.is_file() and p.name not in NOT_DATA):
        target = dest / file.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(file, target)
        except OSError:  # another filesystem, or links not allowed
            shutil.copy2(file, target)
            how = "copy"
    return how


def save_checkpoint(model, tokenizer, path: str | Path, state_dict: dict | None = None) -> Path:
    """Write `model` and `tokenizer` as one Hugging Face checkpoint directory and return its path.

    `state_dict`, when given, is written instead of the model's own: after sharded training
    (ZeRO-3, FSDP) only the gathered one holds the whole weights.

    The directory holds config.json, generation_config.json, model.safetensors and the tokenizer
    files with the chat template, and loads with `AutoModelForCausalLM.from_pretrained(path)` /
    `AutoTokenizer.from_pretrained(path)` offline. Writing atomically (temporary directory, then
    rename) is the calling stage's business, as for every other output.
    """
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path, state_dict=state_dict)
    tokenizer.save_pretrained(path)
    return path
