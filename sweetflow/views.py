"""What each party reads of a dialogue: the policy's view and the critic's.

- `policy_chat(view)`: the dialogue from the agent's side, as chat messages: the instructions of
  the task's domain, which state the episode's turn limit (`episodes.max_turns`), the public
  problem, then the turns. No hidden information. This is what a policy generates from and what
  SFT, RFT and DPO train it on.
- `chat_for(view, reference)`: the same, or with `reference` the critic's view: the training-time
  information (the reference solution) written into the system message (SWEET-RL step 3).
- `dialogue_view(task, dialogue, max_turns)`: a recorded dialogue (a trajectory's, or a prefix of
  it) as the view an agent had, in an episode of the turn limit the trajectory records.
"""

from __future__ import annotations

from types import ModuleType

from sweetflow.core.domains import domain_module
from sweetflow.core.params import DOMAINS
from sweetflow.dialogue import AGENT, EpisodeView, Message

NUMBER_WORDS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve")


def turn_limit(max_turns: int) -> str:
    """The sentence that tells the policy its turn limit (`episodes.max_turns`), in words up to twelve."""
    count = NUMBER_WORDS[max_turns - 1] if max_turns <= len(NUMBER_WORDS) else str(max_turns)
    messages = "message" if max_turns == 1 else "messages"
    return f"You have at most {count} {messages}; the last one counts as your answer."


def domain_instructions(domain: str) -> ModuleType:
    """`sweetflow.<domain>.instructions`: the domain's POLICY_INSTRUCTIONS and ANSWER_LANGUAGE."""
    return domain_module(domain, "instructions")


def policy_instructions(domain: str, max_turns: int) -> str:
    """The policy's system message for a task of `domain` in episodes of at most `max_turns` turns."""
    return domain_instructions(domain).POLICY_INSTRUCTIONS.format(limit=turn_limit(max_turns))


def every_policy_instructions(max_turns: int) -> tuple[str, ...]:
    """`policy_instructions` of every domain, in the order of DOMAINS."""
    return tuple(policy_instructions(domain, max_turns) for domain in DOMAINS)


def policy_chat(view: EpisodeView) -> list[dict]:
    """The dialogue from the agent's side, as chat messages (the policy's own view: no hidden
    information), with the instructions of the task's domain."""
    chat = [
        {"role": "system", "content": policy_instructions(view.domain, view.max_turns)},
        {"role": "user", "content": view.problem_description},
    ]
    chat += [{"role": "assistant" if m.role == AGENT else "user", "content": m.content} for m in view.messages]
    return chat


TRAINING_INFO = """

Training-time information, which the person has and the assistant does not: the final answer is
```{language}
{reference}
```"""


def dialogue_view(task: dict, dialogue: list[dict], max_turns: int, seed: int = 0) -> EpisodeView:
    """An episode view of a recorded dialogue (a trajectory's, or a prefix of it), in the task's
    domain, of an episode of at most `max_turns` turns: the limit the trajectory records (its
    `max_turns` column), which the rebuilt instructions state as the agent was told it."""
    messages = [Message(turn["role"], turn["content"]) for turn in dialogue]
    domain = task.get("domain", "backend")
    return EpisodeView(task["task_id"], task["problem_description"], messages, seed, domain=domain, max_turns=max_turns)


def chat_for(view: EpisodeView, reference: str | None) -> list[dict]:
    """The policy's chat, or with `reference` the critic's: the same with `c` in the system message."""
    chat = policy_chat(view)
    if reference is not None:
        language = domain_instructions(view.domain).ANSWER_LANGUAGE
        info = TRAINING_INFO.format(language=language, reference=reference.strip())
        chat[0] = {**chat[0], "content": chat[0]["content"] + info}
    return chat
