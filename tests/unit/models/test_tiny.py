"""The tiny model's tokenizer and chat template, and the SFT examples built with them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sweetflow.frontend.tasks import generate_frontend_tasks
from sweetflow.models.tiny import EOS, tokenizer_corpus, train_tokenizer
from sweetflow.rl.sft import IGNORE, demo_chats, encode_chats
from sweetflow.views import policy_instructions

CHAT = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Write f. It returns a number."},
    {"role": "assistant", "content": "Which number?"},
    {"role": "user", "content": "It returns 86."},
    {"role": "assistant", "content": "I WANT TO ANSWER:\n```python\ndef f():\n    return 86\n```"},
]


def tokenizer(corpus):
    corpus_texts = tokenizer_corpus(corpus.train, demo_chats(corpus.train, corpus.demos), 10)
    return train_tokenizer(corpus_texts, 384, 10, max_length=1536)


def test_tokenizer_splits_numbers_into_digits_and_round_trips(corpus):
    tok = tokenizer(corpus)
    pieces = tok.tokenize("told 86, writes 1234.5")
    digits = [p.lstrip("Ġ") for p in pieces if any(c.isdigit() for c in p)]
    assert digits == list("86") + list("12345")
    for text in ("déjà vu → 3 µs", "  def f(x):\n\treturn x  ", "I WANT TO ANSWER:"):
        assert tok.decode(tok(text)["input_ids"]) == text


def test_chat_template_marks_exactly_the_assistant_turns(corpus):
    tok = tokenizer(corpus)
    enc = tok.apply_chat_template(CHAT, tokenize=True, return_dict=True, return_assistant_tokens_mask=True)
    ids, mask = enc["input_ids"], enc["assistant_masks"]
    marked = [i for i, m in zip(ids, mask) if m]
    # Each assistant turn's content and the end-of-message token that closes it, nothing else.
    expected = tok("Which number?")["input_ids"] + [tok.convert_tokens_to_ids(EOS)]
    expected += tok(CHAT[4]["content"])["input_ids"] + [tok.convert_tokens_to_ids(EOS)]
    assert marked == expected
    text = tok.decode(ids)
    assert text.startswith("<|begin|><|system|>Be brief.<|end|><|user|>") and text.endswith("```<|end|>")
    prompt = tok.apply_chat_template(CHAT[:4], tokenize=False, add_generation_prompt=True)
    assert prompt.endswith("It returns 86.<|end|><|assistant|>")

    [example], cut = encode_chats(tok, [CHAT], max_length=4096)
    assert cut == 0 and example.input_ids == ids
    assert [t for t in example.labels if t != IGNORE] == expected
    [short], cut = encode_chats(tok, [CHAT], max_length=10)
    assert cut == 1 and len(short.input_ids) == 10


def test_demonstrations_become_the_policy_view(corpus):
    chats = demo_chats(corpus.train, corpus.demos)
    assert len(chats) == len(corpus.demos)
    for chat, demo in zip(chats, corpus.demos):
        assert [m["role"] for m in chat[:2]] == ["system", "user"]
        assert [m["content"] for m in chat[2:]] == [t["content"] for t in demo["dialogue"]]
        assert chat[-1]["role"] == "assistant" and "I WANT TO ANSWER:" in chat[-1]["content"]


@pytest.mark.parametrize("domain", ["backend", "frontend"])
def test_the_template_leaves_out_the_instructions_of_the_runs_turn_limit(domain):
    """The instructions state `episodes.max_turns`; the tokenizer of a 3-turn run leaves out the
    3-turn instructions (and would show the 10-turn ones), the training information stays."""
    texts = [CHAT[1]["content"], CHAT[2]["content"]]
    three, ten = train_tokenizer(texts, 300, 3), train_tokenizer(texts, 300, 10)
    for tokenizer, max_turns, shown in ((three, 3, ""), (ten, 3, policy_instructions(domain, 3)), (ten, 10, "")):
        system = policy_instructions(domain, max_turns) + "\n\nTraining-time information: 86"
        text = tokenizer.apply_chat_template([{"role": "system", "content": system}, *CHAT[1:]], tokenize=False)
        assert text.startswith(f"<|begin|><|system|>{shown}\n\nTraining-time information: 86{EOS}<|user|>")
    assert list(tokenizer_corpus([], [[{"role": "system", "content": policy_instructions(domain, 3)}]], 3)) == []


PAGES = generate_frontend_tasks(40, 8, seed=5)


@pytest.fixture(scope="module")
def page_tokenizers():
    train, _ = PAGES
    pages = [t["ground_truth"] for t in train]
    return {name: train_tokenizer(pages, 2048, 10, pre_tokenizer=name) for name in ("digits", "lines")}


def test_a_line_tokenizer_writes_a_page_in_a_fraction_of_the_tokens_and_never_spans_lines(page_tokenizers):
    _, test = PAGES  # pages the tokenizer never saw
    for task in test:
        page = task["ground_truth"]
        digits, lines = (page_tokenizers[n](page)["input_ids"] for n in ("digits", "lines"))
        assert len(lines) < len(digits) / 2
        assert page_tokenizers["lines"].decode(lines) == page
        pieces = [page_tokenizers["lines"].decode([i]) for i in lines]
        # A token holds at most one line break, and only as its last character.
        assert all("\n" not in piece[:-1] for piece in pieces)


@given(text=st.text(max_size=200))
def test_both_pre_tokenizers_round_trip_any_text(page_tokenizers, text):
    for tok in page_tokenizers.values():
        assert tok.decode(tok(text)["input_ids"]) == text
