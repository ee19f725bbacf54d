"""The tiny checkpoint and a real OpenAI-compatible server for it, reached with the `openai` client,
directly and through a fault-injecting proxy. One checkpoint and one server per session."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import openai
import pytest
from transformers import AutoTokenizer

from sweetflow.models.tiny import build_model, train_tokenizer
from tests.support.fault_proxy import FaultProxy
from tests.support.llm_server import CORPUS

MESSAGES = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "How much does each item weigh?"},
]
# Nothing listens there: with error=1.0 or drop=1.0 the proxy never forwards.
NOWHERE = "http://127.0.0.1:9/v1"


def client(base_url: str, **kwargs) -> openai.OpenAI:
    return openai.OpenAI(base_url=base_url, api_key="unused", **kwargs)


# ----- the checkpoint -----


def test_checkpoint_loads_offline(tiny_checkpoint, tmp_path):
    """A fresh process with HF_HUB_OFFLINE=1 and an empty HF_HOME loads it with the Auto classes
    and generates: nothing is fetched from anywhere."""
    script = textwrap.dedent(
        f"""
        import json
        from transformers import AutoModelForCausalLM, AutoTokenizer
        tok = AutoTokenizer.from_pretrained({str(tiny_checkpoint)!r})
        model = AutoModelForCausalLM.from_pretrained({str(tiny_checkpoint)!r})
        inputs = tok.apply_chat_template({MESSAGES!r}, add_generation_prompt=True,
                                       return_tensors="pt", return_dict=True)
        out = model.generate(**inputs, max_new_tokens=5, do_sample=False)
        print(json.dumps({{"arch": type(model).__name__, "tied": model.config.tie_word_embeddings,
                          "new": out.shape[1] - inputs["input_ids"].shape[1]}}))
        """
    )
    (tmp_path / "hub").mkdir()
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_HOME=str(tmp_path))
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    info = json.loads(result.stdout.strip().splitlines()[-1])
    assert info["arch"] == "LlamaForCausalLM" and info["tied"]
    assert 1 <= info["new"] <= 5
    files = {p.name for p in tiny_checkpoint.iterdir()}
    assert {"config.json", "generation_config.json", "model.safetensors", "tokenizer.json"} <= files


def test_chat_template_renders(tiny_checkpoint):
    tok = AutoTokenizer.from_pretrained(tiny_checkpoint)
    dialogue = MESSAGES + [{"role": "assistant", "content": "Each item weighs 3 kg."}]
    assert tok.apply_chat_template(dialogue, tokenize=False) == (
        "<|begin|><|system|>You are a helpful assistant.<|end|>"
        "<|user|>How much does each item weigh?<|end|><|assistant|>Each item weighs 3 kg.<|end|>"
    )
    prompt = tok.apply_chat_template(MESSAGES, add_generation_prompt=True, tokenize=False)
    assert prompt.endswith("<|end|><|assistant|>")
    encoded = tok.apply_chat_template(MESSAGES, add_generation_prompt=True)
    assert tok.decode(encoded["input_ids"]) == prompt
    # The assistant mask covers the assistant's content and its closing EOS, nothing else.
    masked = tok.apply_chat_template(dialogue, return_dict=True, return_assistant_tokens_mask=True)
    kept = [i for i, m in zip(masked["input_ids"], masked["assistant_masks"]) if m]
    assert tok.decode(kept) == "Each item weighs 3 kg.<|end|>"
    with pytest.raises(Exception, match="unknown role"):
        tok.apply_chat_template([{"role": "tool", "content": "x"}], tokenize=False)


def test_tokenizer_splits_digits_and_is_deterministic():
    a, b = train_tokenizer(CORPUS, 300, 10), train_tokenizer(CORPUS, 300, 10)
    assert a.backend_tokenizer.to_str() == b.backend_tokenizer.to_str()
    assert [t for t in a.tokenize("told 86, writes 1234") if t.strip("Ġ").isdigit()] == list("861234")
    assert a.decode(a("any text: ünïcödé ✓ 86")["input_ids"]) == "any text: ünïcödé ✓ 86"


def test_build_model_is_deterministic_by_seed():
    tok = train_tokenizer(CORPUS, 300, 10)
    m1, m2, m3 = build_model(tok, seed=1), build_model(tok, seed=1), build_model(tok, seed=2)
    w1, w2, w3 = (m.model.embed_tokens.weight for m in (m1, m2, m3))
    assert (w1 == w2).all() and not (w1 == w3).all()
    assert m1.lm_head.weight.data_ptr() == w1.data_ptr()  # tied
    assert m1.config.vocab_size == len(tok) and m1.config.eos_token_id == tok.eos_token_id


# ----- the served model -----


def test_served_model_answers_chat_completion(openai_server):
    base_url, model = openai_server
    reply = client(base_url, max_retries=0, timeout=60).chat.completions.create(
        model=model, messages=MESSAGES, max_tokens=20, temperature=1.0
    )
    choice = reply.choices[0]
    assert isinstance(choice.message.content, str)
    assert choice.finish_reason in ("stop", "length")
    assert 1 <= reply.usage.completion_tokens <= 20


def test_client_recovers_through_fault_proxy(openai_server):
    """10 requests through errors, dropped connections and a delay longer than the client's
    timeout: with retries, all succeed; the proxy's counters show the faults happened."""
    base_url, model = openai_server
    with FaultProxy(base_url, drop=0.2, error=0.3, delay=0.1, delay_s=3.0, seed=0, retry_after=0.05) as proxy:
        api = client(proxy.base_url, max_retries=8, timeout=2.0)
        replies = [
            api.chat.completions.create(model=model, messages=MESSAGES, max_tokens=8, temperature=1.0)
            for _ in range(10)
        ]
        counts = proxy.counts
    assert all(isinstance(r.choices[0].message.content, str) for r in replies)
    assert counts["dropped"] > 0 and counts["errors"] > 0, counts
    assert counts["requests"] == counts["passed"] + counts["dropped"] + counts["delayed"] + counts["errors"]
    assert counts["requests"] > 10 and counts["passed"] >= 10


def test_fault_proxy_streams_through(openai_server):
    base_url, model = openai_server
    with FaultProxy(base_url, drop=0, error=0, delay=0) as proxy:
        stream = client(proxy.base_url, max_retries=0, timeout=60).chat.completions.create(
            model=model, messages=MESSAGES, max_tokens=10, temperature=1.0, stream=True
        )
        chunks = list(stream)
        assert proxy.counts["forwarded"] == 1
    assert len(chunks) >= 2
    assert chunks[-1].choices[0].finish_reason in ("stop", "length")


# ----- the proxy alone (no upstream needed) -----


def test_fault_proxy_injected_errors_surface_without_retries():
    with FaultProxy(NOWHERE, drop=0, delay=0, error=1.0, error_status=(429,)) as proxy:
        with pytest.raises(openai.RateLimitError) as info:
            client(proxy.base_url, max_retries=0).chat.completions.create(model="m", messages=MESSAGES)
        assert info.value.body["type"] == "rate_limit_exceeded"
    with FaultProxy(NOWHERE, drop=0, delay=0, error=1.0, error_status=(503,)) as proxy:
        with pytest.raises(openai.InternalServerError):
            client(proxy.base_url, max_retries=1, timeout=5).chat.completions.create(model="m", messages=MESSAGES)
        assert proxy.status_counts == {503: 2}  # the first try and one retry
    with FaultProxy(NOWHERE, drop=1.0, delay=0, error=0) as proxy:
        with pytest.raises(openai.APIConnectionError):
            client(proxy.base_url, max_retries=0).chat.completions.create(model="m", messages=MESSAGES)
        assert proxy.counts["dropped"] == 1


def test_fault_proxy_is_seeded_and_loopback_only():
    def decisions(seed):
        proxy = FaultProxy(NOWHERE, drop=0.2, delay=0.2, error=0.2, seed=seed)
        return [proxy._decide() for _ in range(50)]

    assert decisions(3) == decisions(3) != decisions(4)
    with pytest.raises(ValueError, match="loopback"):
        FaultProxy("http://example.invalid:8000/v1")
    with pytest.raises(ValueError):
        FaultProxy(NOWHERE, drop=0.6, error=0.6)
    with FaultProxy(NOWHERE) as proxy:
        assert proxy.base_url.startswith("http://127.0.0.1:") and proxy.base_url.endswith("/v1")
        started = time.monotonic()
    assert time.monotonic() - started < 5  # stops promptly on exit
