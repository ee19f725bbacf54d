"""Training text from the task corpus and the demonstrations.

A demonstration becomes one SFT example: the whole dialogue from the agent's side (`policy_chat`,
the messages a policy sees), rendered by the checkpoint's chat template. The loss is on the
assistant tokens only (every agent turn, each with the end-of-message token that closes it), which
the template marks through `return_assistant_tokens_mask`. One example per dialogue, not one per
turn: each prompt is read once, and the model learns every turn with the context it had.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

import torch

from sweetflow.agents import POLICY_SYSTEM_PROMPTS, policy_chat
from sweetflow.dialogue import EpisodeView, Message

IGNORE = -100  # the label cross-entropy skips: prompt tokens and padding
INSTRUCTIONS = frozenset(POLICY_SYSTEM_PROMPTS.values())


def demo_chats(tasks: list[dict], demos: list[dict]) -> list[list[dict]]:
    """Each demonstration as the chat messages of the policy's view, its own turns included."""
    by_id = {t["task_id"]: t for t in tasks}
    chats = []
    for demo in demos:
        task = by_id[demo["task_id"]]
        messages = [Message(turn["role"], turn["content"]) for turn in demo["dialogue"]]
        view = EpisodeView(
            demo["task_id"], task["problem_description"], messages, demo["seed"], domain=task.get("domain", "backend")
        )
        chats.append(policy_chat(view))
    return chats


def tokenizer_corpus(tasks: list[dict], chats: list[list[dict]]) -> Iterator[str]:
    """What the tokenizer learns its merges from: every task's description, hidden facts and
    reference code, and the demonstrations as the model will read them: the tiny model's chat
    template leaves the policy's instructions out, so they are left out here too."""
    for task in tasks:
        yield task["problem_description"]
        yield from (fact["fact"] for fact in task.get("facts") or [])
        yield task["ground_truth"]
    for chat in chats:
        yield from (message["content"] for message in chat if message["content"] not in INSTRUCTIONS)


@dataclass
class Example:
    input_ids: list[int]
    labels: list[int]  # input_ids on assistant tokens, IGNORE elsewhere


def encode_chats(tokenizer, chats: list[list[dict]], max_length: int) -> tuple[list[Example], int]:
    """Tokenise each chat with its assistant mask; return the examples and how many were cut to
    `max_length` (a cut dialogue loses its last turns, usually the answer: keep this at 0)."""
    examples, cut = [], 0
    for chat in chats:
        enc = tokenizer.apply_chat_template(chat, tokenize=True, return_dict=True, return_assistant_tokens_mask=True)
        ids, mask = enc["input_ids"], enc["assistant_masks"]
        if len(ids) > max_length:
            ids, mask, cut = ids[:max_length], mask[:max_length], cut + 1
        examples.append(Example(ids, [t if m else IGNORE for t, m in zip(ids, mask)]))
    return examples, cut


def split_by_task(tasks: list[dict], share: float, seed: int) -> set[str]:
    """The ids of a random `share` of tasks whose demonstrations are held out for validation. By
    task, not by dialogue: both samples of a task go to the same side, so validation text is unseen."""
    ids = sorted(t["task_id"] for t in tasks)
    random.Random(seed).shuffle(ids)
    return set(ids[: round(share * len(ids))])


def collate(examples: list[Example], pad_id: int) -> dict[str, torch.Tensor]:
    """Right-pad a batch; padding is masked out of attention and of the loss."""
    width = max(len(e.input_ids) for e in examples)
    input_ids = torch.full((len(examples), width), pad_id, dtype=torch.long)
    labels = torch.full((len(examples), width), IGNORE, dtype=torch.long)
    attention_mask = torch.zeros((len(examples), width), dtype=torch.long)
    for i, e in enumerate(examples):
        n = len(e.input_ids)
        input_ids[i, :n] = torch.tensor(e.input_ids)
        labels[i, :n] = torch.tensor(e.labels)
        attention_mask[i, :n] = 1
    return {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels}
