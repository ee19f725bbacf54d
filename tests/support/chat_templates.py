"""Chat templates in the formats of stock instruct models, written for these tests, and tokenizers
and checkpoints that carry them.

Each format exists twice: as a stock model ships it (no `{% generation %}` blocks) and as a twin with
the agent's content and closing token inside a generation block, so that transformers' own
`return_assistant_tokens_mask` is the oracle for the masks found without blocks.
- `llama3`: header tokens around each role, the content trimmed, `<|eot_id|>` closing every turn;
- `chatml` (Qwen2.5): `<|im_start|>role` ... `<|im_end|>`, a default system turn when there is none;
- `mistral`: `[INST] ... [/INST]`, the content trimmed, `</s>` after each agent turn, and the system
  prompt moved into the LAST user turn: how a turn renders depends on what follows it;
- `open_last`: ChatML whose final agent turn stays open (no `<|im_end|>` once nothing follows).
"""

from __future__ import annotations

from pathlib import Path

from sweetflow.models.checkpoint import save_checkpoint
from sweetflow.models.tiny import build_model, train_tokenizer
from tests.support.llm_server import CORPUS

_LLAMA3 = (
    "{{ bos_token }}{% for m in messages %}"
    "<|start_header_id|>{{ m['role'] }}<|end_header_id|>\n\n"
    "{% if m['role'] == 'assistant' %}{OPEN}{{ m['content'] | trim }}<|eot_id|>{CLOSE}"
    "{% else %}{{ m['content'] | trim }}<|eot_id|>{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"
)
_CHATML = (
    "{% if messages[0]['role'] != 'system' %}<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
    "{% if m['role'] == 'assistant' %}{OPEN}{{ m['content'] }}<|im_end|>{CLOSE}{{ '\\n' }}"
    "{% else %}{{ m['content'] }}<|im_end|>\n{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
_MISTRAL = (
    "{% if messages[0]['role'] == 'system' %}{% set system = messages[0]['content'] %}{% set rest = messages[1:] %}"
    "{% else %}{% set system = '' %}{% set rest = messages %}{% endif %}"
    "{% set last = namespace(user=-1) %}"
    "{% for m in rest %}{% if m['role'] == 'user' %}{% set last.user = loop.index0 %}{% endif %}{% endfor %}"
    "{{ bos_token }}{% for m in rest %}"
    "{% if m['role'] == 'user' %}[INST] {% if system and loop.index0 == last.user %}{{ system }}\n\n{% endif %}"
    "{{ m['content'] }}[/INST]"
    "{% elif m['role'] == 'assistant' %} {OPEN}{{ m['content'] | trim }}{{ eos_token }}{CLOSE}"
    "{% else %}{{ raise_exception('roles are system, user and assistant') }}{% endif %}"
    "{% endfor %}"
)
_OPEN_LAST = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
    "{% if m['role'] == 'assistant' %}{OPEN}{{ m['content'] }}{% if not loop.last %}<|im_end|>{% endif %}{CLOSE}"
    "{% if not loop.last %}{{ '\\n' }}{% endif %}"
    "{% else %}{{ m['content'] }}<|im_end|>\n{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

# style: (template, bos, eos, other special tokens)
STYLES = {
    "llama3": (_LLAMA3, "<|begin_of_text|>", "<|eot_id|>", ["<|start_header_id|>", "<|end_header_id|>"]),
    "chatml": (_CHATML, None, "<|im_end|>", ["<|im_start|>"]),
    "mistral": (_MISTRAL, "<s>", "</s>", ["[INST]", "[/INST]"]),
    "open_last": (_OPEN_LAST, None, "<|im_end|>", ["<|im_start|>"]),
}


def template(style: str, generation: bool = False) -> str:
    text = STYLES[style][0]
    opening, closing = ("{% generation %}", "{% endgeneration %}") if generation else ("", "")
    return text.replace("{OPEN}", opening).replace("{CLOSE}", closing)


def stock_tokenizer(style: str, generation: bool = False, max_length: int = 3072):
    """A byte-level BPE tokenizer with the style's special tokens, BOS/EOS and chat template."""
    _, bos, eos, others = STYLES[style]
    tokenizer = train_tokenizer(CORPUS, vocab_size=300, max_turns=10, max_length=max_length)
    tokenizer.add_special_tokens({"additional_special_tokens": [t for t in (bos, eos, *others) if t]})
    tokenizer.eos_token = eos
    tokenizer.bos_token = bos
    tokenizer.chat_template = template(style, generation)
    return tokenizer


def stock_checkpoint(path: Path, style: str, max_length: int = 3072) -> Path:
    """A randomly initialised tiny Llama whose tokenizer carries the stock `style` template (no
    generation blocks), its generation ending on the style's end-of-turn token: a stand-in, on CPU,
    for a downloaded instruct checkpoint."""
    tokenizer = stock_tokenizer(style, max_length=max_length)
    model = build_model(tokenizer, hidden_size=32, layers=2, heads=2, max_length=max_length)
    for config in (model.config, model.generation_config):
        config.eos_token_id = tokenizer.eos_token_id
        config.bos_token_id = tokenizer.bos_token_id
    return save_checkpoint(model, tokenizer, path)
