"""What the policy is told in the backend domain (`sweetflow.views`): its instructions, and the language
the critic's training-time information (the reference function) is written in."""

from __future__ import annotations

from sweetflow.dialogue import ANSWER_MARKER

# `{limit}` is the sentence that states the episode's turn limit (`sweetflow.views.turn_limit`).
POLICY_INSTRUCTIONS = f"""\
You are a programming assistant working with a person who wants a Python function. Their request \
leaves out details that only they know, and your function will be checked against exactly what \
they have in mind. Ask them short, specific questions, one or two per message. When you know \
enough, write {ANSWER_MARKER} followed by the complete function in a ```python block. {{limit}}"""

ANSWER_LANGUAGE = "python"
