"""Assistant masks without `{% generation %}` blocks (sweetflow.models.assistant_masks), checked
against transformers' own masks of the same template with blocks, on templates in the Llama 3,
ChatML, Mistral and open-last-turn formats (tests/support/chat_templates.py)."""

from __future__ import annotations

from functools import cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sweetflow.errors import InputError
from sweetflow.models.assistant_masks import PROBE_CHAT, TemplateError, assistant_masks, check_template
from sweetflow.models.checkpoint import load_checkpoint, local_checkpoint
from sweetflow.rl.sequences import NOT_SCORED, segmented
from sweetflow.rl.sft import IGNORE, encode_chats
from tests.support.chat_templates import STYLES, stock_checkpoint, stock_tokenizer


@cache
def tokenizers(style: str):
    """(the stock template, its twin with generation blocks)."""
    return stock_tokenizer(style), stock_tokenizer(style, generation=True)


# Message texts with whitespace at either end, newlines, code and non-ASCII; never blank (an empty
# block is a span of no characters, which transformers' masking handles as a special case).
TEXT = st.text(
    st.characters(codec="utf-8", exclude_characters="\x00<>", exclude_categories=("Cs", "Cc"))
    | st.sampled_from("\n\t "),
    min_size=1,
    max_size=40,
).filter(lambda s: s.strip())


@st.composite
def chats(draw):
    chat = [{"role": "system", "content": draw(TEXT)}] if draw(st.booleans()) else []
    for _ in range(draw(st.integers(1, 4))):
        chat += [{"role": "user", "content": draw(TEXT)}, {"role": "assistant", "content": draw(TEXT)}]
    if draw(st.booleans()):  # a state: the last agent turn followed by the person's reply
        chat.append({"role": "user", "content": draw(TEXT)})
    return chat


@pytest.mark.parametrize("style", sorted(STYLES))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch=st.lists(chats(), min_size=1, max_size=3))
def test_masks_without_generation_blocks_equal_transformers_masks_with_them(style, batch):
    plain, blocks = tokenizers(style)
    assert assistant_masks(plain, batch) == assistant_masks(blocks, batch)


@pytest.mark.parametrize("style", sorted(STYLES))
def test_each_turn_is_its_content_and_the_token_that_closes_it(style):
    plain, _ = tokenizers(style)
    check_template(plain, style)
    chat = PROBE_CHAT + [{"role": "user", "content": "Thanks."}, {"role": "assistant", "content": "  Done.  "}]
    turns = segmented(plain, chat, "turns", 10_000)  # each run of masked tokens a segment
    texts = [
        plain.decode([i for i, s in zip(turns.input_ids, turns.segment_ids) if s == k])
        for k in range(max(turns.segment_ids) + 1)
    ]
    eos = plain.eos_token
    expected = [m["content"] for m in chat if m["role"] == "assistant"]
    assert [t.removesuffix(eos) for t in texts] == [
        e.strip() if style in ("llama3", "mistral") else e for e in expected
    ]
    closed = [t.endswith(eos) for t in texts]
    # Open-last leaves the final turn unclosed: there is no token at which generation stopped.
    assert closed == [True, True, style != "open_last"]


def test_the_training_views_score_the_same_tokens_as_with_blocks():
    plain, blocks = tokenizers("mistral")
    chat = PROBE_CHAT + [{"role": "user", "content": "And round it."}]
    assert segmented(plain, chat, "turns", 10_000) == segmented(blocks, chat, "turns", 10_000)
    last = segmented(plain, chat, "last", 10_000)
    scored = plain.decode([i for i, s in zip(last.input_ids, last.segment_ids) if s != NOT_SCORED])
    assert scored == PROBE_CHAT[-1]["content"] + "</s>"
    [example], _ = encode_chats(plain, [chat], 10_000)
    [oracle], _ = encode_chats(blocks, [chat], 10_000)
    assert example == oracle and any(label != IGNORE for label in example.labels)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("{{ m['content'] | trim }}<|eot_id|>", None),  # the stock template itself: accepted
        ("{{ m['content'] | upper }}<|eot_id|>", "changes the text of agent turn"),
        ("<|eot_id|>", "renders 0 of 2 agent turns"),  # drops the agent's content
        ("{{ m['content'] }}{{ m['content'] }}<|eot_id|>", "renders 4 of 2 agent turns"),
    ],
)
def test_a_template_whose_turns_cannot_be_told_apart_fails_the_check(change, message):
    tok = stock_tokenizer("llama3")
    tok.chat_template = tok.chat_template.replace("{{ m['content'] | trim }}<|eot_id|>", change, 1)
    if message is None:
        check_template(tok, "backend.model.base")
        return
    with pytest.raises(TemplateError, match=message) as caught:
        check_template(tok, "backend.model.base")
    assert str(caught.value).startswith("backend.model.base: ")


def test_a_template_that_cannot_render_a_system_turn_fails_the_check():
    tok = stock_tokenizer("chatml")
    tok.chat_template = (
        "{% for m in messages %}{% if m['role'] == 'system' %}{{ raise_exception('no system') }}{% endif %}{% endfor %}"
    )
    with pytest.raises(TemplateError, match="cannot render a system/user/assistant chat: no system"):
        check_template(tok, "x")


def test_checkpoints_are_checked_when_adopted_and_when_loaded(tmp_path):
    path = stock_checkpoint(tmp_path / "llama3", "llama3", max_length=256)
    assert local_checkpoint(str(path), "backend.model.base") == path
    model, tok = load_checkpoint(path)
    assert tok.eos_token == "<|eot_id|>" and model.generation_config.eos_token_id == tok.eos_token_id
    config = path / "tokenizer_config.json"
    config.write_text(config.read_text().replace("| trim", "| upper"))
    (path / "chat_template.jinja").exists() and (path / "chat_template.jinja").write_text(
        (path / "chat_template.jinja").read_text().replace("| trim", "| upper")
    )
    with pytest.raises(InputError, match=r"^backend\.model\.base \(.*\): the chat template changes the text"):
        local_checkpoint(str(path), "backend.model.base")
    with pytest.raises(TemplateError, match="changes the text"):
        load_checkpoint(path)
