"""Local Hugging Face checkpoints: finding them, adopting them, loading them offline, copying them into a
stage output.

Nothing is ever downloaded: every load passes `local_files_only=True`, and a model name that is not
a local directory (a hub id such as `meta-llama/Llama-3.1-8B-Instruct`) is an input error that says
how to get the files.

Adoption (`local_checkpoint`, stage `base_model` with `model.base` a directory) makes the checkpoint's
chat template one that training can use, or refuses it in seconds, before any rollout. The template is
kept as it is unless it needs one of three changes, each a few Jinja lines put before it (the
adopted checkpoint's `chat_template.jinja`, which every later load, trained checkpoint and server reads):
- the date: a template that reads the clock (Llama 3.2's `strftime_now`, `date_string`) gets the date of
  params `chat_template.date`, so that no render depends on the day a stage runs;
- reasoning: a template that drops `<think>…</think>` from earlier agent turns (Qwen3) renders with its
  own switch off (`enable_thinking = false`), so the policy generates the turns it is trained on; one
  without a switch (DeepSeek-R1) is refused;
- the system message: where the template refuses it (Gemma 2, Mistral v0.1/v0.2) or drops it from a chat
  that ends with an agent turn (Mistral v0.3, which moves it into the last user turn only when that
  turn ends the chat; Phi-3-mini, which leaves it out), it is folded into the first user turn, so that
  the critic reads the training-time information and the policy its instructions in every sequence.
What was done is returned for the stage's manifest (`chat_template`).
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import torch
from safetensors import SafetensorError
from transformers import AutoModelForCausalLM, AutoTokenizer

from sweetflow.core.artifacts import NOT_DATA
from sweetflow.core.errors import InputError
from sweetflow.models.assistant_masks import (
    TemplateError,
    check_template,
    drops_reasoning,
    has_generation_blocks,
    lost_system_message,
    refusal,
)

TEMPLATE_FILE = "chat_template.jinja"  # transformers reads it before tokenizer_config.json's chat_template
# The system message, folded into the first user turn, ends with this before the user's text.
FOLD_SEPARATOR = "\n\n"
_FOLD = (
    "{%- if messages and messages[0]['role'] == 'system' %}"
    "{%- if messages|length > 1 and messages[1]['role'] == 'user' %}"
    "{%- set messages = [{'role': 'user', 'content': messages[0]['content'] + SEP + messages[1]['content']}]"
    " + messages[2:] %}"
    "{%- else %}{%- set messages = [{'role': 'user', 'content': messages[0]['content']}] + messages[1:] %}"
    "{%- endif %}{%- endif %}"
).replace("SEP", json.dumps(FOLD_SEPARATOR))
_REASONING_OFF = "{%- set enable_thinking = false %}"
# strftime directives a template may ask of `strftime_now`, the padding-free ones first.
_DIRECTIVES = ("%-d", "%-m", "%-j", "%Y", "%y", "%m", "%d", "%e", "%j", "%B", "%b", "%A", "%a", "%H", "%M", "%S")


@dataclass
class Adoption:
    """A local checkpoint and the chat template training uses with it; `record` says what was changed."""

    path: Path
    template: str
    changed: bool
    record: dict = field(default_factory=dict)

    def copy_to(self, dest: Path) -> str:
        """Fill `dest` with the checkpoint (`link_or_copy_tree`), its chat template the adopted one."""
        how = link_or_copy_tree(self.path, dest)
        if self.changed:
            write_template(dest, self.template)
        return how


def local_checkpoint(name: str, key: str, date: datetime.date) -> Adoption:
    """The directory `name` if it is a Hugging Face checkpoint whose chat template training can use,
    adapted as the module's docstring says; else an InputError naming the params `key` and the cause."""
    path = Path(name).expanduser()
    if not path.is_dir():
        raise InputError(
            f"{key}: {name!r} is neither 'tiny' nor a local directory or .gguf file. Nothing is downloaded at run "
            f"time: fetch the checkpoint on a machine with network access (e.g. `hf download {name} --local-dir "
            f"/models/{name.split('/')[-1]}`) and set {key} to that directory."
        )
    if not (path / "config.json").is_file():
        raise InputError(f"{key}: {path} has no config.json; it is not a Hugging Face checkpoint directory")
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    if not tokenizer.chat_template:
        raise InputError(f"{key}: the tokenizer in {path} has no chat template; the policy needs an instruct model")
    original = tokenizer.get_chat_template()
    template, record = adapt_template(tokenizer, f"{key} ({path})", date)
    return Adoption(path, template, template != original, record)


def adapt_template(tokenizer, where: str, date: datetime.date) -> tuple[str, dict]:
    """(the chat template training uses, what was changed) for the tokenizer's template, which the
    tokenizer then carries; a TemplateError naming `where` and the cause if none can be used."""
    original = tokenizer.get_chat_template()
    if has_generation_blocks(tokenizer):  # written for training (the tiny model's): used as it is
        check_template(tokenizer, where)
        return original, {"system": "system message"}
    prelude, record = "", {}
    if "strftime_now" in original or "date_string" in original:
        prelude += pinned_clock(date)
        record["date"] = date.isoformat()
    if drops_reasoning(tokenizer):
        if "enable_thinking" not in original:
            raise TemplateError(
                f"{where}: the chat template drops the agent's reasoning (<think>…</think>) from earlier turns and "
                "has no enable_thinking switch to turn reasoning off: the turns the agent records would not be the "
                "turns the template renders"
            )
        prelude += _REASONING_OFF
        record["reasoning"] = "off (enable_thinking = false)"
    tokenizer.chat_template = prelude + original
    cause = refusal(tokenizer) or lost_system_message(tokenizer)
    if cause is None:
        record["system"] = "system message"
    else:
        prelude += _FOLD
        tokenizer.chat_template = prelude + original
        record["system"] = "first user turn"
        record["system_folded_because"] = cause.removeprefix("the chat template ")
    check_template(tokenizer, where)
    return tokenizer.chat_template, record


def pinned_clock(date: datetime.date) -> str:
    """Jinja that makes `date_string` and `strftime_now(format)` give `date` whatever the day."""
    replace = "".join(f"|replace({json.dumps(d)}, {json.dumps(_strftime(date, d))})" for d in _DIRECTIVES)
    return (
        f"{{%- set date_string = {json.dumps(date.strftime('%d %b %Y'))} %}}"
        f"{{%- macro strftime_now(format) %}}{{{{ format{replace} }}}}{{%- endmacro %}}"
    )


def _strftime(date: datetime.date, directive: str) -> str:
    if directive.startswith("%-"):  # glibc's unpadded forms, which Python's strftime does not promise
        return str(int(date.strftime("%" + directive[2:])))
    return date.strftime(directive)


def write_template(dest: Path, template: str) -> None:
    """Make `template` the chat template of the checkpoint in `dest`. Files that may be hard links to the
    source's are replaced, never written through."""
    target = dest / TEMPLATE_FILE
    target.unlink(missing_ok=True)
    target.write_text(template)
    config = dest / "tokenizer_config.json"
    if config.is_file():
        data = json.loads(config.read_text())
        if "chat_template" in data:  # one template in one place: transformers would read the file's anyway
            del data["chat_template"]
            config.unlink()
            config.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def load_checkpoint(path: Path | str, device: str | torch.device = "cpu", dtype: str = "auto"):
    """(model, tokenizer) from a local checkpoint directory, in eval mode, in `dtype` (auto: the
    checkpoint's own).
    A chat template whose agent turns cannot be told apart is a TemplateError here, before any use."""
    path = Path(path)
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"{path}: not a checkpoint directory (no config.json)")
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    check_template(tokenizer, str(path))
    try:
        model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True, dtype=dtype).to(device)
    except SafetensorError as e:  # a truncated or corrupt weights file: name it, in one line
        weights = path / "model.safetensors"  # else the shards of a large model
        raise InputError(f"{weights if weights.exists() else path}: safetensors weights unreadable ({e})") from None
    return model.eval(), tokenizer


def resolve_device(device: str = "auto") -> torch.device:
    """Params `device` as a torch device: auto, the first CUDA GPU when one is visible, else the CPU."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise InputError(f"params.yaml: device: {device}, but no CUDA GPU is visible (auto uses one where there is)")
    return torch.device(device)


def placement(model) -> dict:
    """Where a model ran, for a stage's manifest: its device type and dtype (the same on every machine of a
    kind; the device's name and memory are the run record's, `sweetflow.core.artifacts.machine`)."""
    return {"device": model.device.type, "dtype": str(model.dtype).removeprefix("torch.")}


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
