"""Which tokens of a rendered chat are the agent's: assistant masks for any chat template.

Training scores only the agent's turns (SFT, RFT, the critics, DPO). A template with `{% generation %}`
blocks (the tiny model's) marks them itself, through `return_assistant_tokens_mask`. Stock templates
(Llama 3.1, Qwen2.5's ChatML, Mistral) have no such blocks, so the turns are found by rendering the
chat twice, once as it is and once with each agent turn's content replaced by a marker, and taking
the difference:
- the marked rendering splits into the template's own text around each turn (headers, the user's
  turns, closing tokens);
- the real rendering must be that text with each turn's content (or the content trimmed, as Llama's
  and Mistral's templates do) in place of its marker: then every turn's characters are known;
- a turn's span also takes the special token that closes it when one follows at once (`<|eot_id|>`,
  `<|im_end|>`, `</s>`): the token at which the model's generation stops, as in the tiny template;
- tokens are matched to spans through the fast tokenizer's character offsets.

This works whatever the template does with what follows a turn (Mistral's moves the system prompt
into the last user turn, so rendering a prefix of the chat would not give a prefix of the whole).
A template that rewrites the content itself (strips reasoning, escapes text) cannot be followed:
`TemplateError`, raised by `check_template` when the base model is adopted or a checkpoint loaded,
before any rollout runs.
"""

from __future__ import annotations

import re

import jinja2

from sweetflow.errors import InputError

GENERATION_BLOCK = re.compile(r"{%-?\s*generation\s*-?%}")

# A chat with every role a policy or critic chat has, and an agent turn in the middle and at the end.
PROBE_CHAT = [
    {"role": "system", "content": "You help a person write a function."},
    {"role": "user", "content": "Write a function that adds a fee."},
    {"role": "assistant", "content": "How large is the fee?"},
    {"role": "user", "content": "The fee is 45."},
    {"role": "assistant", "content": "I WANT TO ANSWER:\ndef fee(x):\n    return x + 45"},
]


class TemplateError(InputError):
    """A chat template whose agent turns cannot be told apart from the rest (the checkpoint is bad input)."""


def has_generation_blocks(tokenizer) -> bool:
    template = tokenizer.chat_template
    return isinstance(template, str) and bool(GENERATION_BLOCK.search(template))


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
    rendered = [_render_with_spans(tokenizer, chat, closers) for chat in chats]
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
        rendered = next((c for c in dict.fromkeys((content, content.strip())) if full.startswith(c + after, at)), None)
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


def check_template(tokenizer, where: str) -> None:
    """Raise TemplateError (naming `where`, e.g. the params key or the checkpoint) unless the
    tokenizer's chat template yields a mask with each agent turn of a probe chat, and nothing else."""
    try:
        ((ids, mask),) = assistant_masks(tokenizer, [PROBE_CHAT])
    except TemplateError as e:
        raise TemplateError(f"{where}: {e}") from None
    except (jinja2.TemplateError, TypeError, KeyError) as e:  # a template that refuses the probe (e.g. a role)
        raise TemplateError(f"{where}: the chat template cannot render a system/user/assistant chat: {e}") from None
    expected = [m["content"] for m in PROBE_CHAT if m["role"] == "assistant"]
    texts = [tokenizer.decode(run, skip_special_tokens=True).strip() for run in _runs(ids, mask)]
    if len(texts) != len(expected) or any(_squeeze(e) not in _squeeze(t) for e, t in zip(expected, texts)):
        raise TemplateError(
            f"{where}: the chat template's assistant mask covers {texts!r}, not the agent's {len(expected)} turns "
            f"{expected!r}"
        )
    others = [m["content"] for m in PROBE_CHAT if m["role"] != "assistant"]
    leaked = [o for o in others if any(_squeeze(o) in _squeeze(t) for t in texts)]
    if leaked:
        raise TemplateError(f"{where}: the chat template's assistant mask covers other turns too: {leaked!r}")


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
