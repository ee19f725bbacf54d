"""Token sequences for the preference losses: dialogues in the policy's or the critic's view, with
the segment of every scored token (sweetflow.preference).

The policy sees the public problem and the dialogue (`policy_chat`). The critic sees the same,
prefixed with the training-time information `c`: the reference solution, written into the system
message (DESIGN.md §2 step 3). Scored tokens are the agent's turns, as the chat template's
assistant mask marks them (its end-of-message token included, as in SFT):
- "turns": each agent turn its own segment (the critic's per-turn advantages),
- "all": every agent turn in one segment (MT-DPO; the official critic's whole-trajectory variant),
- "last": only the last agent turn (one action after a state: candidates, step pairs).
"""

from __future__ import annotations

from typing import Literal

from sweetflow.agents import policy_chat
from sweetflow.dialogue import EpisodeView, Message
from sweetflow.preference import NOT_SCORED, SegmentedSequence

Scoring = Literal["turns", "all", "last"]

TRAINING_INFO = """

Training-time information, which the person has and the assistant does not: the final answer is
```{language}
{reference}
```"""
LANGUAGE = {"backend": "python", "frontend": "html"}


def dialogue_view(task: dict, dialogue: list[dict], seed: int = 0) -> EpisodeView:
    """An episode view of a recorded dialogue (a trajectory's, or a prefix of it), in the task's domain."""
    messages = [Message(turn["role"], turn["content"]) for turn in dialogue]
    return EpisodeView(task["task_id"], task["problem_description"], messages, seed, domain=task.get("domain", "backend"))


def chat_for(view: EpisodeView, reference: str | None) -> list[dict]:
    """The policy's chat, or with `reference` the critic's: the same with `c` in the system message."""
    chat = policy_chat(view)
    if reference is not None:
        info = TRAINING_INFO.format(language=LANGUAGE[view.domain], reference=reference.strip())
        chat[0] = {**chat[0], "content": chat[0]["content"] + info}
    return chat


def segmented(tokenizer, chat: list[dict], scoring: Scoring, max_length: int) -> SegmentedSequence | None:
    """The chat as token ids with segment ids; None when it does not fit in `max_length` tokens
    (cutting it would drop the last turns, the ones that decide the outcome)."""
    return segmented_batch(tokenizer, [chat], scoring, max_length)[0]


def segmented_batch(tokenizer, chats: list[list[dict]], scoring: Scoring, max_length: int) -> list[SegmentedSequence | None]:
    """`segmented` of each chat, tokenised in one call: the Rust tokenizer encodes a batch on every
    core, ~1.7x faster than one chat at a time for the thousands of candidates of a ranking."""
    if not chats:
        return []
    enc = tokenizer.apply_chat_template(chats, tokenize=True, return_dict=True, return_assistant_tokens_mask=True)
    return [_segments(list(ids), list(mask), scoring, max_length) for ids, mask in zip(enc["input_ids"], enc["assistant_masks"])]


def _segments(ids: list[int], mask: list[int], scoring: Scoring, max_length: int) -> SegmentedSequence | None:
    if not any(mask):
        raise ValueError(
            "the chat template marks no assistant tokens: it needs {% generation %} blocks "
            "(transformers' return_assistant_tokens_mask) to tell the agent's turns apart"
        )
    if len(ids) > max_length:
        return None
    runs, turn, previous = [], -1, 0
    for m in mask:
        if m and not previous:
            turn += 1
        runs.append(turn if m else NOT_SCORED)
        previous = m
    if scoring == "all":
        segments = [0 if r != NOT_SCORED else NOT_SCORED for r in runs]
    elif scoring == "last":
        segments = [0 if r == turn else NOT_SCORED for r in runs]
    else:
        segments = runs
    return SegmentedSequence(ids, segments)


def context_length(tokenizer, model_config) -> int:
    """The longest sequence the model reads: its position limit, else the tokenizer's."""
    return getattr(model_config, "max_position_embeddings", None) or tokenizer.model_max_length
