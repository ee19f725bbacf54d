"""What `rft` trains on: the successful trajectories, each an SFT example."""

from __future__ import annotations

from sweetflow.core.errors import InputError
from sweetflow.rl.methods.rft.params import Params
from sweetflow.rl.policy_methods import SftTraining, Source
from sweetflow.rl.sequences import successful_chats
from sweetflow.rl.sft import encode_chats


def training_data(p: Params, source: Source) -> SftTraining:
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
