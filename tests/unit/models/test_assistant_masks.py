"""Assistant masks and chat-template adoption (sweetflow.models.assistant_masks, .checkpoint) on the real
templates of stock instruct models (tests/data/chat_templates): masks equal to transformers' own masks of a
hand-made twin with generation blocks, the system message in every view, the cause named for each
template refused, and the tiny model's template used exactly as before."""

from __future__ import annotations

import copy
import datetime
import os
from functools import cache

import jinja2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sweetflow.core.errors import InputError
from sweetflow.models.assistant_masks import (
    PROBE_CHAT,
    TemplateError,
    assistant_masks,
    check_template,
    trained_chat,
)
from sweetflow.models.checkpoint import FOLD_SEPARATOR, adapt_template, load_checkpoint, local_checkpoint, pinned_clock
from sweetflow.models.tiny import EOS
from sweetflow.rl.sequences import NOT_SCORED, segmented
from sweetflow.rl.sft import IGNORE, encode_chats
from sweetflow.views import chat_for, dialogue_view, policy_chat, policy_instructions
from tests.support.chat_templates import DATE, STOCK, USABLE, _trained, stock_checkpoint, stock_tokenizer, twin


@cache
def adopted(model: str):
    """(the model's tokenizer with the adopted template, the same with its generation-block twin, the record)."""
    plain = stock_tokenizer(model)
    template, record = adapt_template(plain, model, DATE)
    blocks = copy.deepcopy(plain)
    blocks.chat_template = twin(model, template)
    return plain, blocks, record


# Message texts with whitespace at either end, newlines, code and non-ASCII; never blank (an empty
# block is a span of no characters, which transformers' masking handles as a special case).
TEXT = st.text(
    st.characters(codec="utf-8", exclude_characters="\x00<>", exclude_categories=("Cs", "Cc"))
    | st.sampled_from("\n\t "),
    min_size=1,
    max_size=40,
).filter(lambda s: s.strip())
# An agent turn as a reasoning model records it, sometimes: its reasoning before the answer.
AGENT_TEXT = st.tuples(st.none() | TEXT, TEXT).map(lambda p: p[1] if p[0] is None else f"<think>{p[0]}</think>{p[1]}")


@st.composite
def chats(draw):
    """Chats in the project's shape: instructions, the problem, then the agent and the person in turn."""
    chat = [{"role": "system", "content": draw(TEXT)}, {"role": "user", "content": draw(TEXT)}]
    for turn in range(draw(st.integers(1, 4))):
        chat += [{"role": "user", "content": draw(TEXT)}] if turn else []
        chat.append({"role": "assistant", "content": draw(AGENT_TEXT)})
    if draw(st.booleans()):  # a state: the last agent turn followed by the person's reply
        chat.append({"role": "user", "content": draw(TEXT)})
    return chat


@pytest.mark.parametrize("model", USABLE)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch=st.lists(chats(), min_size=1, max_size=3))
def test_masks_without_generation_blocks_equal_transformers_masks_of_the_twin(model, batch):
    plain, blocks, _ = adopted(model)
    # The twin is given each chat as training reads it: a reasoning template's agent turns without reasoning.
    assert assistant_masks(plain, batch) == assistant_masks(blocks, [trained_chat(plain, chat) for chat in batch])


DIALOGUE = [
    {"role": "agent", "content": "<think>Ask about the fee.</think>How large is the fee?"},
    {"role": "human", "content": "45, added to the amount."},
    {"role": "agent", "content": "\n\nI WANT TO ANSWER:\n```python\ndef fee(x):\n    return x + 45\n```"},
]
TASK = {"task_id": "t1", "problem_description": "Write a function that adds a fee to an amount."}
REFERENCE = "def fee(amount):\n    return amount + 45"


@pytest.mark.parametrize("model", USABLE)
def test_the_system_message_reaches_the_critic_and_the_policy_in_every_sequence(model):
    plain, _, record = adopted(model)
    view = dialogue_view(TASK, DIALOGUE, 10)
    critic = plain.apply_chat_template(trained_chat(plain, chat_for(view, REFERENCE)), tokenize=False)
    policy = plain.apply_chat_template(trained_chat(plain, policy_chat(view)), tokenize=False)
    prompt = plain.apply_chat_template(
        policy_chat(dialogue_view(TASK, DIALOGUE[:2], 10)), tokenize=False, add_generation_prompt=True
    )
    assert REFERENCE in critic and policy_instructions("backend", 10) in critic
    assert policy_instructions("backend", 10) in prompt and policy.startswith(
        prompt
    )  # generated from what it trains on
    folded = policy_instructions("backend", 10) + FOLD_SEPARATOR + TASK["problem_description"]
    assert (folded in policy) == (record["system"] == "first user turn")


# The templates as shipped: those that training cannot use as they are, and why.
REASONING_ON = "drops the agent's reasoning (<think>…</think>) from earlier turns, and generates with reasoning on"
RAW = {
    "llama-3.1-8b-instruct": None,
    "qwen2.5-7b-instruct": None,
    "smollm2-135m-instruct": None,
    "llama-3.2-3b-instruct": "writes today's date (strftime_now) into every prompt",
    "qwen3-0.6b": REASONING_ON,
    "mistral-7b-instruct-v0.2": "refuses a system role (Conversation roles must alternate",
    "gemma-2-2b-it": "refuses a system role (System role not supported)",
    "mistral-7b-instruct-v0.3": "drops the system message from a chat that ends with an agent turn: the critic",
    "phi-3-mini-4k-instruct": "drops the system message from a chat that ends with an agent turn: the critic",
    "deepseek-r1": REASONING_ON,
}
ADOPTED = {
    "llama-3.1-8b-instruct": {"system": "system message", "date": "2024-07-26"},
    "llama-3.2-3b-instruct": {"system": "system message", "date": "2024-07-26"},
    "qwen2.5-7b-instruct": {"system": "system message"},
    "smollm2-135m-instruct": {"system": "system message"},
    "qwen3-0.6b": {"system": "system message", "reasoning": "off (enable_thinking = false)"},
    "mistral-7b-instruct-v0.2": {"system": "first user turn", "system_folded_because": RAW["mistral-7b-instruct-v0.2"]},
    "gemma-2-2b-it": {"system": "first user turn", "system_folded_because": RAW["gemma-2-2b-it"]},
    "mistral-7b-instruct-v0.3": {"system": "first user turn", "system_folded_because": RAW["mistral-7b-instruct-v0.3"]},
    "phi-3-mini-4k-instruct": {"system": "first user turn", "system_folded_because": RAW["phi-3-mini-4k-instruct"]},
}


@pytest.mark.parametrize("model", sorted(STOCK))
def test_each_template_as_shipped_is_checked_and_the_cause_named(model):
    tokenizer = stock_tokenizer(model)
    if RAW[model] is None:
        check_template(tokenizer, "backend.model.base")
        return
    with pytest.raises(TemplateError) as caught:
        check_template(tokenizer, "backend.model.base")
    assert str(caught.value).startswith(f"backend.model.base: the chat template {RAW[model]}")


@pytest.mark.parametrize("model", sorted(ADOPTED))
def test_adoption_makes_each_template_usable_and_says_how(model):
    _, _, record = adopted(model)
    assert {k: v for k, v in record.items() if k != "system_folded_because"} == {
        k: v for k, v in ADOPTED[model].items() if k != "system_folded_because"
    }
    if "system_folded_because" in ADOPTED[model]:
        assert record["system_folded_because"].startswith(ADOPTED[model]["system_folded_because"])


def test_a_reasoning_template_without_a_switch_is_refused_at_adoption_naming_the_key(tmp_path):
    path = stock_checkpoint(tmp_path / "r1", "deepseek-r1", max_length=256)
    with pytest.raises(
        InputError,
        match=r"^backend\.model\.base \(.*r1\): the chat template drops the agent's "
        r"reasoning .* has no enable_thinking switch",
    ):
        local_checkpoint(str(path), "backend.model.base", DATE)


def test_a_reasoning_model_generates_without_reasoning_and_trains_on_the_answer():
    plain, _, _ = adopted("qwen3-0.6b")
    view = dialogue_view(TASK, DIALOGUE, 10)
    prompt = plain.apply_chat_template(
        policy_chat(dialogue_view(TASK, DIALOGUE[:2], 10)), tokenize=False, add_generation_prompt=True
    )
    assert prompt.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")  # enable_thinking=False
    seq = segmented(plain, policy_chat(view), "turns", 10_000)
    turns = [plain.decode([i for i, s in zip(seq.input_ids, seq.segment_ids) if s == k]) for k in range(2)]
    assert turns == ["How large is the fee?<|im_end|>", DIALOGUE[2]["content"].lstrip("\n") + "<|im_end|>"]


@pytest.mark.parametrize("day", [DATE, datetime.date(2031, 1, 2)])
def test_the_date_a_template_reads_is_the_params_date(day):
    tokenizer = stock_tokenizer("llama-3.2-3b-instruct")
    adapt_template(tokenizer, "x", day)
    rendered = tokenizer.apply_chat_template(PROBE_CHAT, tokenize=False)
    assert f"Today Date: {day.strftime('%d %b %Y')}\n" in rendered
    env = jinja2.Environment()
    formats = env.from_string(pinned_clock(day) + "{{ strftime_now('%Y-%m-%d|%B %-d|%a') }}").render()
    assert formats == day.strftime("%Y-%m-%d|%B ") + str(day.day) + day.strftime("|%a")


@pytest.mark.parametrize("model", USABLE)
def test_each_turn_is_the_agents_text_and_the_token_that_closes_it(model):
    plain, _, _ = adopted(model)
    more = [{"role": "user", "content": "Thanks."}, {"role": "assistant", "content": " Done. "}]
    chat = trained_chat(plain, PROBE_CHAT + more)
    turns = segmented(plain, chat, "turns", 10_000)  # each run of masked tokens a segment
    texts = [
        plain.decode([i for i, s in zip(turns.input_ids, turns.segment_ids) if s == k])
        for k in range(max(turns.segment_ids) + 1)
    ]
    expected = [m["content"] for m in chat if m["role"] == "assistant"]
    assert len(texts) == len(expected) and all(t.endswith(plain.eos_token) for t in texts)
    assert ["".join(t.removesuffix(plain.eos_token).split()) for t in texts] == ["".join(e.split()) for e in expected]


def test_the_training_views_score_the_same_tokens_as_with_blocks():
    plain, blocks, _ = adopted("mistral-7b-instruct-v0.3")
    chat = PROBE_CHAT + [{"role": "user", "content": "And round it."}]
    assert segmented(plain, chat, "turns", 10_000) == segmented(blocks, chat, "turns", 10_000)
    last = segmented(plain, chat, "last", 10_000)
    scored = plain.decode([i for i, s in zip(last.input_ids, last.segment_ids) if s != NOT_SCORED])
    assert scored == PROBE_CHAT[-1]["content"].strip() + "</s>"
    [example], _ = encode_chats(plain, [chat], 10_000)
    [oracle], _ = encode_chats(blocks, [chat], 10_000)
    assert example == oracle and any(label != IGNORE for label in example.labels)


TURN = "message['content'] | trim + '<|eot_id|>'"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (TURN, None),  # the stock template itself: accepted
        ("message['content'] | upper + '<|eot_id|>'", "changes the text of agent turn"),
        ("'<|eot_id|>'", "renders 0 of 2 agent turns"),  # drops every turn's content
        ("message['content'] | trim + message['content'] | trim + '<|eot_id|>'", "renders 4 of 2 agent turns"),
    ],
)
def test_a_template_whose_turns_cannot_be_told_apart_fails_the_check(change, message):
    tok = stock_tokenizer("llama-3.1-8b-instruct")
    assert tok.chat_template.count(TURN) == 1
    tok.chat_template = tok.chat_template.replace(TURN, change)
    if message is None:
        check_template(tok, "backend.model.base")
        return
    with pytest.raises(TemplateError, match=message) as caught:
        check_template(tok, "backend.model.base")
    assert str(caught.value).startswith("backend.model.base: ")


def test_adoption_writes_the_adopted_template_beside_the_linked_weights(tmp_path):
    source = stock_checkpoint(tmp_path / "mistral", "mistral-7b-instruct-v0.3", max_length=256)
    before = {p.name: p.read_bytes() for p in source.iterdir() if p.is_file()}
    adoption = local_checkpoint(str(source), "backend.model.base", DATE)
    assert adoption.changed and adoption.record["system"] == "first user turn"
    dest = tmp_path / "adopted"
    assert adoption.copy_to(dest) == "hardlink"
    assert os.path.samefile(dest / "model.safetensors", source / "model.safetensors")
    assert not os.path.samefile(dest / "chat_template.jinja", source / "chat_template.jinja")
    assert {p.name: p.read_bytes() for p in source.iterdir() if p.is_file()} == before  # the source is untouched
    model, tok = load_checkpoint(dest)
    assert tok.chat_template == adoption.template != before["chat_template.jinja"].decode()
    assert model.generation_config.eos_token_id == tok.eos_token_id
    # Loading the source as it is, not adopted, names the cause.
    with pytest.raises(TemplateError, match="drops the system message"):
        load_checkpoint(source)


def test_a_checkpoint_whose_template_breaks_is_refused_when_adopted_and_when_loaded(tmp_path):
    path = stock_checkpoint(tmp_path / "llama", "llama-3.1-8b-instruct", max_length=256)
    assert local_checkpoint(str(path), "backend.model.base", DATE).path == path
    template = path / "chat_template.jinja"
    template.write_text(template.read_text().replace(TURN, "message['content'] | upper + '<|eot_id|>'"))
    with pytest.raises(InputError, match=r"^backend\.model\.base \(.*\): the chat template changes the text"):
        local_checkpoint(str(path), "backend.model.base", DATE)
    with pytest.raises(TemplateError, match="changes the text"):
        load_checkpoint(path)


def test_the_tiny_models_template_is_used_as_it_is():
    """The default run: the tiny template's own generation blocks mark the turns, reasoning and
    leading newlines included, exactly as transformers does; adoption leaves it unchanged."""
    tok = copy.deepcopy(_trained(3072))
    original = tok.chat_template
    assert adapt_template(tok, "backend.model.base", DATE) == (original, {"system": "system message"})
    assert tok.chat_template == original
    chats = [PROBE_CHAT, PROBE_CHAT[:3], PROBE_CHAT + [{"role": "user", "content": "Thanks."}]]
    enc = tok.apply_chat_template(chats, tokenize=True, return_dict=True, return_assistant_tokens_mask=True)
    assert assistant_masks(tok, chats) == [(list(i), list(m)) for i, m in zip(enc["input_ids"], enc["assistant_masks"])]
    assert trained_chat(tok, PROBE_CHAT) is PROBE_CHAT
    [(ids, mask)] = assistant_masks(tok, [PROBE_CHAT])
    assert tok.decode([i for i, m in zip(ids, mask) if m]) == "".join(
        m["content"] + EOS for m in PROBE_CHAT if m["role"] == "assistant"
    )
