"""What each party reads of a dialogue: the policy's view and the critic's.

- `policy_chat(view)`: the dialogue from the agent's side, as chat messages: the instructions of
  the task's domain, which state the episode's turn limit (`episodes.max_turns`), the public
  problem, then the turns. No hidden information. This is what a policy generates from and what
  SFT, RFT and DPO train it on.
- `chat_for(view, reference)`: the same, or with `reference` the critic's view: the training-time
  information (the reference solution) written into the system message (SWEET-RL step 3).
- `dialogue_view(task, dialogue, max_turns)`: a recorded dialogue (a trajectory's, or a prefix of
  it) as the view an agent had.
"""

from __future__ import annotations

from sweetflow.dialogue import AGENT, ANSWER_MARKER, EpisodeView, Message

BACKEND_SYSTEM_PROMPT = f"""\
You are a programming assistant working with a person who wants a Python function. Their request \
leaves out details that only they know, and your function will be checked against exactly what \
they have in mind. Ask them short, specific questions, one or two per message. When you know \
enough, write {ANSWER_MARKER} followed by the complete function in a ```python block. {{limit}}"""


FRONTEND_SYSTEM_PROMPT = f"""\
You are a web designer working with a person who wants a web page. Their description leaves out \
most details (colours, texts, layout), and your final page will be compared with exactly the page \
they have in mind. In each message you may show one complete page in HTML between <html> and \
</html>, styled with Tailwind CSS 2.2.19 (<link \
href="https://cdn.jsdelivr.net/npm/tailwindcss@2.2.19/dist/tailwind.min.css" rel="stylesheet">) \
and with pictures from https://picsum.photos/id/48/WIDTH/HEIGHT; the person will look at it and \
tell you how it differs from what they want. When the page is right, write {ANSWER_MARKER} \
followed by the final page. {{limit}}"""


# The policy's instructions, by the domain of the task (EpisodeView.domain), before the turn limit.
POLICY_SYSTEM_PROMPTS = {"backend": BACKEND_SYSTEM_PROMPT, "frontend": FRONTEND_SYSTEM_PROMPT}

NUMBER_WORDS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve")


def turn_limit(max_turns: int) -> str:
    """The sentence that tells the policy its turn limit (`episodes.max_turns`), in words up to twelve."""
    count = NUMBER_WORDS[max_turns - 1] if max_turns <= len(NUMBER_WORDS) else str(max_turns)
    messages = "message" if max_turns == 1 else "messages"
    return f"You have at most {count} {messages}; the last one counts as your answer."


def policy_instructions(domain: str, max_turns: int) -> str:
    """The policy's system message for a task of `domain` in episodes of at most `max_turns` turns."""
    return POLICY_SYSTEM_PROMPTS[domain].format(limit=turn_limit(max_turns))


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


LANGUAGE = {"backend": "python", "frontend": "html"}


def dialogue_view(task: dict, dialogue: list[dict], max_turns: int, seed: int = 0) -> EpisodeView:
    """An episode view of a recorded dialogue (a trajectory's, or a prefix of it), in the task's
    domain, of an episode of at most `max_turns` turns (`episodes.max_turns`)."""
    messages = [Message(turn["role"], turn["content"]) for turn in dialogue]
    domain = task.get("domain", "backend")
    return EpisodeView(task["task_id"], task["problem_description"], messages, seed, domain=domain, max_turns=max_turns)


def chat_for(view: EpisodeView, reference: str | None) -> list[dict]:
    """The policy's chat, or with `reference` the critic's: the same with `c` in the system message."""
    chat = policy_chat(view)
    if reference is not None:
        info = TRAINING_INFO.format(language=LANGUAGE[view.domain], reference=reference.strip())
        chat[0] = {**chat[0], "content": chat[0]["content"] + info}
    return chat
