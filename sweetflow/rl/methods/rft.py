"""Rejection fine-tuning: SFT on the offline trajectories whose reward reaches the domain's `min_reward`."""

from __future__ import annotations

from sweetflow.core.errors import InputError
from sweetflow.core.params import RftParams
from sweetflow.rl.policy_methods import SftTraining, Source
from sweetflow.rl.sequences import successful_chats
from sweetflow.rl.sft import encode_chats


def training_data(p: RftParams, source: Source) -> SftTraining:
    min_reward = p.min_reward[source.domain]
    chats = successful_chats(source.tasks, source.trajectories, min_reward)
    examples, cut = encode_chats(source.tokenizer, chats, source.max_length)
    if not examples:
        raise InputError(f"{source.rollout}: no trajectory reaches reward {min_reward}: nothing for RFT to imitate")
    data = {
        "train_dialogues": len(examples),
        "dialogues_cut": cut,
        "train_tokens_per_epoch": sum(len(e.input_ids) for e in examples),
    }
    return SftTraining([], data, examples)
