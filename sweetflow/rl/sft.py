"""Supervised fine-tuning on dialogues: the warm start of the tiny base policy on demonstrations,
and rejection fine-tuning (RFT) on successful trajectories.

A dialogue becomes one example: the whole of it from the agent's side (the policy's view), rendered
by the checkpoint's chat template. The loss is the mean cross-entropy over the assistant tokens
(every agent turn, each with the end-of-message token that closes it), as
`sweetflow.models.assistant_masks` finds them in any chat template. One example per dialogue, not
one per turn: each prompt is read once, and the model learns every turn with the context it had.
`eval/loss` is the same loss on held-out dialogues.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader

from sweetflow.models.assistant_masks import assistant_masks
from sweetflow.rl.logprobs import forward_logprobs
from sweetflow.rl.loop import Fitted, Objective, StepResult, TrainRun, fit, forward_batch_size
from sweetflow.views import dialogue_view, policy_chat

IGNORE = -100  # the label cross-entropy skips: prompt tokens and padding


def demo_chats(tasks: list[dict], demos: list[dict]) -> list[list[dict]]:
    """Each demonstration (a trajectory record) as the chat messages of the policy's view, its own
    turns included, stating the turn limit the demonstration records."""
    by_id = {t["task_id"]: t for t in tasks}
    return [policy_chat(dialogue_view(by_id[d["task_id"]], d["dialogue"], d["max_turns"], d["seed"])) for d in demos]


@dataclass
class Example:
    input_ids: list[int]
    labels: list[int]  # input_ids on assistant tokens, IGNORE elsewhere


def encode_chats(tokenizer, chats: list[list[dict]], max_length: int) -> tuple[list[Example], int]:
    """Tokenise each chat with its assistant mask; return the examples and how many were cut to
    `max_length` (a cut dialogue loses its last turns, usually the answer: keep this at 0)."""
    examples, cut = [], 0
    for ids, mask in assistant_masks(tokenizer, chats):
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


def token_nll(model, batch: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """The summed negative log-likelihood of the batch's assistant tokens, and their count. Logits
    are computed only where they predict one (`predicting`): most tokens are prompt, and skipping
    their vocabulary projection and softmax makes the tiny model's SFT step ~15% faster."""
    scored = batch["labels"] != IGNORE
    logps = forward_logprobs(model, batch["input_ids"], scored, attention_mask=batch["attention_mask"])
    return -logps.sum(), scored.sum()


class SftObjective(Objective):
    """The mean cross-entropy over assistant tokens; `eval/loss` is the same on `holdout`."""

    def __init__(self, train: list[Example], holdout: list[Example], pad_id: int, forward_batch: int):
        self.items, self.lengths = train, [len(example.input_ids) for example in train]
        self.holdout, self.pad_id, self.forward_batch = holdout, pad_id, forward_batch
        self.holdout_loader = None  # prepared by the accelerator at the first evaluation

    def collate(self, items: list[Example]) -> dict:
        return collate(items, self.pad_id)

    def loss(self, model, batch: dict) -> StepResult:
        nll, count = token_nll(model, batch)
        return StepResult(nll / count.clamp(min=1), int(batch["attention_mask"].sum()))

    def weight(self, batch: dict) -> int:
        """The scored tokens, what `loss` is a mean over."""
        return int((batch["labels"] != IGNORE).sum())

    def evaluate(self, model, accelerator: Accelerator) -> dict[str, float]:
        if not self.holdout:
            return {}
        if self.holdout_loader is None:
            loader = DataLoader(self.holdout, batch_size=self.forward_batch, collate_fn=self.collate)
            self.holdout_loader = accelerator.prepare(loader)
        loss = mean_loss(model, self.holdout_loader, accelerator)
        return {} if loss is None else {"loss": loss}


def train_sft(model, train: list[Example], holdout: list[Example], *, run: TrainRun, pad_id: int) -> Fitted:
    """Fine-tune `model` on `train` for `run.trainer.epochs` epochs; see `fit` for what is returned."""
    objective = SftObjective(train, holdout, pad_id, forward_batch_size(run.trainer, run.engine))
    return fit(model, objective, run)


@torch.no_grad()
def mean_loss(model, loader, accelerator: Accelerator) -> float | None:
    """Cross-entropy per assistant token over a whole loader, summed over processes (None if empty)."""
    if not len(loader):
        return None
    total = torch.zeros(2, device=accelerator.device)
    for batch in loader:
        total += torch.stack([x.float() for x in token_nll(model, batch)])
    total = accelerator.reduce(total, "sum")
    return round(float(total[0] / total[1]), 5) if total[1] > 0 else None
