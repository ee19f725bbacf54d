"""What the policy is told in the frontend domain (`sweetflow.views`): its instructions, and the language
the critic's training-time information (the target page) is written in."""

from __future__ import annotations

from sweetflow.dialogue import ANSWER_MARKER

# `{limit}` is the sentence that states the episode's turn limit (`sweetflow.views.turn_limit`).
POLICY_INSTRUCTIONS = f"""\
You are a web designer working with a person who wants a web page. Their description leaves out \
most details (colours, texts, layout), and your final page will be compared with exactly the page \
they have in mind. In each message you may show one complete page in HTML between <html> and \
</html>, styled with Tailwind CSS 2.2.19 (<link \
href="https://cdn.jsdelivr.net/npm/tailwindcss@2.2.19/dist/tailwind.min.css" rel="stylesheet">) \
and with pictures from https://picsum.photos/id/48/WIDTH/HEIGHT; the person will look at it and \
tell you how it differs from what they want. When the page is right, write {ANSWER_MARKER} \
followed by the final page. {{limit}}"""

ANSWER_LANGUAGE = "html"
