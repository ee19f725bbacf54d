"""Which tokens of a rendered chat are the agent's: assistant masks for any chat template, and the
check that a template can be trained on at all.

Training scores only the agent's turns (SFT, RFT, the critics, DPO). A template with `{% generation %}`
blocks (the tiny model's) marks them itself, through `return_assistant_tokens_mask`. Stock templates
(Llama 3.x, Qwen's ChatML, Mistral, Gemma, Phi-3) have no such blocks, so the turns are found by rendering
the chat twice, once as it is and once with each agent turn's content replaced by a marker, and taking
the difference:
- the marked rendering splits into the template's own text around each turn (headers, the user's
  turns, closing tokens);
- the real rendering must be that text with each turn's content in place of its marker, as it is or
  trimmed (Llama's, Mistral's and Gemma's templates trim it; Qwen3's drops the leading newlines of the
  last turn): then every turn's characters are known;
- a turn's span also takes the special token that closes it when one follows at once (`<|eot_id|>`,
  `<|im_end|>`, `</s>`, `<end_of_turn>`): the token at which the model's generation stops;
- tokens are matched to spans through the fast tokenizer's character offsets.

This works whatever the template does with what follows a turn (Mistral v0.3's puts the system prompt
into the last user turn, so rendering a prefix of the chat would not give a prefix of the whole).

Reasoning templates (Qwen3, DeepSeek-R1) drop `<think>…</think>` from earlier agent turns. Such a turn
is trained as the template keeps it: its text after the reasoning, in every position, so that a turn
reads the same as the context of later turns and as its own training target. The policy generates
without reasoning (`sweetflow.models.checkpoint` pins the template's own switch off at adoption).

`check_template` proves, on a probe chat, what training needs of a template, before any rollout runs
(at adoption and whenever a checkpoint is loaded): masks with each agent turn and nothing else, the
system message (the policy's instructions, the critic's training-time information) present in a
sequence that ends with an agent turn, the generation prompt the start of the training sequence, no
reasoning switched on that training would drop, and no date read from the clock. Anything else is a
`TemplateError` that names the cause.
"""

from __future__ import annotations

import datetime
import re

import jinja2

from sweetflow.core.errors import InputError

GENERATION_BLOCK = re.compile(r"{%-?\s*generation\s*-?%}")
REASONING_END = "</think>"  # what Qwen3's and DeepSeek-R1's templates cut an agent turn at

# The probe: the policy's instructions in the system message (the critic's view adds training-time
# information), an agent turn with reasoning in the middle, and a last agent turn with leading newlines.
PROBE_INSTRUCTIONS = "You help a person write a function."
PROBE_INFO = "Training-time information: the answer adds 45."
PROBE_CHAT = [
    {"role": "system", "content": PROBE_INSTRUCTIONS},
    {"role": "user", "content": "Write a function that adds a fee."},
    {"role": "assistant", "content": "<think>The fee is not known yet.</think>How large is the fee?"},
    {"role": "user", "content": "The fee is 45."},
    {"role": "assistant", "content": "\n\nI WANT TO ANSWER:\ndef fee(x):\n    return x + 45"},
]
# Two days on which a template that reads the clock renders two different prompts.
CLOCK_PROBE = (datetime.date(2024, 7, 26), datetime.date(2031, 1, 2))


class TemplateError(InputError):
    """A chat template that training cannot use (the checkpoint is bad input); the message names the cause."""


def has_generation_blocks(tokenizer) -> bool:
    template = tokenizer.chat_template
    return isinstance(template, str) and bool(GENERATION_BLOCK.search(template))


def drops_reasoning(tokenizer) -> bool:
    """Whether the template cuts reasoning out of agent turns (Qwen3, DeepSeek-R1: `</think>` in it)."""
    template = tokenizer.get_chat_template()
    return not has_generation_blocks(tokenizer) and REASONING_END in template


def without_reasoning(content: str) -> str:
    """An agent turn as a reasoning template keeps it in earlier turns: the text after its last `</think>`."""
    return content.rsplit(REASONING_END, 1)[-1]


def trained_chat(tokenizer, chat: list[dict]) -> list[dict]:
    """The chat whose rendering training reads: agent turns without the reasoning the template drops."""
    if not drops_reasoning(tokenizer):
        return chat
    return [{**m, "content": without_reasoning(m["content"])} if m["role"] == "assistant" else m for m in chat]


def assistant_masks(tokenizer, chats: list[list[dict]]) -> list[tuple[list[int], list[int]]]:
    """(token ids, assistant mask) of each chat, rendered by the tokenizer's chat template; the mask
    is 1 on the agent's turns and the special token closing each, 0 elsewhere."""
    if not chats:
        return []
    if has_generation_blocks(tokenizer):
        enc = tokenizer.apply_chat_template(chats, tokenize=True, return_dict=True, return_assistant_tokens_mask=True)
        return [(list(ids), list(mask)) for ids, mask in zip(enc["input_ids"], enc["assistant_masks"])]
    if not tokenizer.is_fast:
        raise TemplateError(
            "a chat template without {% generation %} blocks needs a fast tokenizer (character offsets)"
        )
    closers = _closing_tokens(tokenizer)
    rendered = [_render_with_spans(tokenizer, trained_chat(tokenizer, chat), closers) for chat in chats]
    # As apply_chat_template(tokenize=True) tokenises: the template writes any BOS itself.
    enc = tokenizer([text for text, _ in rendered], add_special_tokens=False, return_offsets_mapping=True)
    out = []
    for ids, offsets, (_, spans) in zip(enc["input_ids"], enc["offset_mapping"], rendered):
        mask = [int(any(start < end_ and end > start_ for start_, end_ in spans)) for start, end in offsets]
        out.append((list(ids), mask))
    return out


def _closing_tokens(tokenizer) -> list[str]:
    """The special tokens' texts, longest first (a longer one may start with a shorter one)."""
    special = set(tokenizer.all_special_tokens)
    special |= {t.content for t in tokenizer.added_tokens_decoder.values() if t.special}
    return sorted((t for t in special if t), key=len, reverse=True)


def _render_with_spans(tokenizer, chat: list[dict], closers: list[str]) -> tuple[str, list[tuple[int, int]]]:
    """The chat as the template renders it, and the character span of each agent turn in it."""
    full = tokenizer.apply_chat_template(chat, tokenize=False)
    turns = [i for i, m in enumerate(chat) if m["role"] == "assistant"]
    markers = {i: f"\x00{k}\x00" for k, i in enumerate(turns)}  # survives case changes: what a rewrite does is seen
    marked = tokenizer.apply_chat_template(
        [{**m, "content": markers[i]} if i in markers else m for i, m in enumerate(chat)], tokenize=False
    )
    pieces = re.split("|".join(re.escape(m) for m in markers.values()), marked) if markers else [marked]
    if len(pieces) != len(turns) + 1:
        raise TemplateError(
            f"the chat template renders {len(pieces) - 1} of {len(turns)} agent turns exactly once; "
            "its agent turns cannot be told apart"
        )
    if not full.startswith(pieces[0]):
        raise TemplateError(
            "the chat template renders the text before the first agent turn differently once the turn is known"
        )
    spans, at = [], len(pieces[0])
    for i, after in zip(turns, pieces[1:]):
        content = chat[i]["content"]
        forms = dict.fromkeys((content, content.strip(), content.lstrip("\n")))  # as is, trimmed, Qwen3's last turn
        rendered = next((c for c in forms if full.startswith(c + after, at)), None)
        if rendered is None:
            raise TemplateError(
                f"the chat template changes the text of agent turn {i} (beyond trimming it) or what surrounds it; "
                "its agent turns cannot be told apart"
            )
        end = at + len(rendered)
        closer = next((c for c in closers if after.startswith(c)), "")
        spans.append((at, end + len(closer)))
        at = end + len(after)
    return full, spans


def _render(tokenizer, chat: list[dict], **kwargs) -> str:
    return tokenizer.apply_chat_template(chat, tokenize=False, **kwargs)


def critic_probe() -> list[dict]:
    """The probe in the critic's view: training-time information after the instructions."""
    return [{**PROBE_CHAT[0], "content": PROBE_INSTRUCTIONS + "\n\n" + PROBE_INFO}, *PROBE_CHAT[1:]]


def refusal(tokenizer) -> str | None:
    """Why the template cannot render the project's chats (a system, user and agent chat), or None."""
    try:
        _render(tokenizer, critic_probe())
        _render(tokenizer, PROBE_CHAT[:-1], add_generation_prompt=True)
        return None
    except (jinja2.TemplateError, TypeError, KeyError) as e:
        try:
            _render(tokenizer, PROBE_CHAT[1:])
        except (jinja2.TemplateError, TypeError, KeyError):
            return f"the chat template cannot render a user/assistant chat: {e}"
        return f"the chat template refuses a system role ({e})"


def lost_system_message(tokenizer) -> str | None:
    """Why the system message (the policy's instructions, the critic's training-time information) would
    not reach the model in training sequences or generation prompts, or None."""
    critic = _render(tokenizer, trained_chat(tokenizer, critic_probe()))
    policy = _render(tokenizer, trained_chat(tokenizer, PROBE_CHAT))
    prompt = _render(tokenizer, PROBE_CHAT[:-1], add_generation_prompt=True)
    if PROBE_INFO not in critic or PROBE_INSTRUCTIONS not in policy:
        return (
            "the chat template drops the system message from a chat that ends with an agent turn: the critic "
            "would never read the training-time information, and the policy would train without its instructions"
        )
    if PROBE_INSTRUCTIONS not in prompt:
        return "the chat template drops the system message from the generation prompt"
    return None


def check_template(tokenizer, where: str) -> None:
    """Raise TemplateError (naming `where`, e.g. the params key or the checkpoint, and the cause) unless
    training can use the tokenizer's chat template: see the module's docstring."""
    cause = refusal(tokenizer)
    if cause is None and _reads_clock(tokenizer):
        cause = (
            "the chat template writes today's date (strftime_now) into every prompt, so a stage rerun on "
            "another day trains on other tokens; adopt the checkpoint through base_model, which pins the date "
            "to params chat_template.date"
        )
    if cause is None:
        cause = _mask_error(tokenizer)
    if cause is None:
        cause = lost_system_message(tokenizer)
    if cause is None and drops_reasoning(tokenizer) and not _reasoning_off(tokenizer):
        cause = (
            "the chat template drops the agent's reasoning (<think>…</think>) from earlier turns, and generates "
            "with reasoning on: the turns the agent records are not the turns the template renders"
        )
    if cause is None:
        prompt = _render(tokenizer, PROBE_CHAT[:-1], add_generation_prompt=True)
        if not _render(tokenizer, trained_chat(tokenizer, PROBE_CHAT)).startswith(prompt):
            cause = (
                "the policy's generation prompt is not the start of its training sequence: it would train on "
                "other instructions than it generates with"
            )
    if cause is not None:
        raise TemplateError(f"{where}: {cause}")


def _reads_clock(tokenizer) -> bool:
    """Whether the probe renders differently on two days: the template calls `strftime_now`, here a
    macro put before it that gives each day (transformers passes no callable from Python to a template)."""
    template = tokenizer.get_chat_template()
    clocks = [f"{{%- macro strftime_now(format) %}}{day.isoformat()}{{%- endmacro %}}" for day in CLOCK_PROBE]
    return len({_render(tokenizer, PROBE_CHAT, chat_template=clock + template) for clock in clocks}) > 1


def _reasoning_off(tokenizer) -> bool:
    """Whether the generation prompt closes the reasoning itself (Qwen3's enable_thinking=False)."""
    prompt = _render(tokenizer, PROBE_CHAT[:-1], add_generation_prompt=True)
    return prompt.rfind(REASONING_END) > prompt.rfind(PROBE_CHAT[-2]["content"])


def _mask_error(tokenizer) -> str | None:
    """What is wrong with the probe's assistant mask: each agent turn and nothing else, or None."""
    try:
        ((ids, mask),) = assistant_masks(tokenizer, [PROBE_CHAT])
    except TemplateError as e:
        return str(e)
    expected = [m["content"] for m in trained_chat(tokenizer, PROBE_CHAT) if m["role"] == "assistant"]
    texts = [tokenizer.decode(run, skip_special_tokens=True).strip() for run in _runs(ids, mask)]
    if len(texts) != len(expected) or any(_squeeze(e) not in _squeeze(t) for e, t in zip(expected, texts)):
        return (
            f"the chat template's assistant mask covers {texts!r}, not the agent's {len(expected)} turns {expected!r}"
        )
    others = [m["content"] for m in PROBE_CHAT if m["role"] != "assistant"]
    leaked = [o for o in others if any(_squeeze(o) in _squeeze(t) for t in texts)]
    if leaked:
        return f"the chat template's assistant mask covers other turns too: {leaked!r}"
    return None


def _runs(ids: list[int], mask: list[int]) -> list[list[int]]:
    """The token ids of each maximal run of masked tokens."""
    runs, previous = [], 0
    for t, m in zip(ids, mask):
        if m and not previous:
            runs.append([])
        if m:
            runs[-1].append(t)
        previous = m
    return runs


def _squeeze(text: str) -> str:
    """The text without whitespace: decoders differ in the spaces they give back."""
    return "".join(text.split())
