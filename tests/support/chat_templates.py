"""Real chat templates of stock instruct models (tests/data/chat_templates, verbatim from public sources:
see its README), and tokenizers and tiny checkpoints that carry them.

Each template also has a hand-made twin: the same text with the agent's content and the token that
closes its turn inside a `{% generation %}` block, so that transformers' own
`return_assistant_tokens_mask` is the oracle for the masks found without blocks. A twin is made by
replacing the template's agent-turn expression (`twin`'s pairs); each replaced text must occur once.
"""

from __future__ import annotations

import copy
import datetime
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import polars as pl

from sweetflow.core.artifacts import read_manifest
from sweetflow.core.tables import dialogues_by_trajectory
from sweetflow.models.checkpoint import load_checkpoint, save_checkpoint
from sweetflow.models.tiny import build_model, train_tokenizer
from sweetflow.rl.sequences import segmented
from sweetflow.views import chat_for, dialogue_view
from tests.support.llm_server import CORPUS

DATA = Path(__file__).resolve().parents[1] / "data" / "chat_templates"
DATE = datetime.date(2024, 7, 26)  # params.yaml's chat_template.date
GEN, END = "{% generation %}", "{% endgeneration %}"


@dataclass(frozen=True)
class Stock:
    """A stock model's template file, its special tokens, and the replacements that make its twin."""

    file: str
    bos: str | None
    eos: str  # the token at which the model's generation of a turn stops
    others: tuple[str, ...]
    twin: tuple[tuple[str, str], ...]


_LLAMA_TURN = (
    "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'"
    "+ message['content'] | trim + '<|eot_id|>' }}",
    "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' }}{%- if message['role'] == 'assistant' %}"
    + GEN
    + "{{- message['content'] | trim + '<|eot_id|>' }}"
    + END
    + "{%- else %}{{- message['content'] | trim + '<|eot_id|>' }}{%- endif %}",
)
_CHATML = ("<|im_start|>",)
_QWEN3_CLOSE = "        {{- '<|im_end|>\\n' }}\n    {%- elif message.role == \"tool\" %}"

STOCK = {
    "llama-3.1-8b-instruct": Stock(
        "llama-3.1-8b-instruct.jinja",
        "<|begin_of_text|>",
        "<|eot_id|>",
        ("<|start_header_id|>", "<|end_header_id|>"),
        (_LLAMA_TURN,),
    ),
    "llama-3.2-3b-instruct": Stock(
        "llama-3.2-3b-instruct.jinja",
        "<|begin_of_text|>",
        "<|eot_id|>",
        ("<|start_header_id|>", "<|end_header_id|>"),
        (_LLAMA_TURN,),
    ),
    "qwen2.5-7b-instruct": Stock(
        "qwen2.5-7b-instruct.jinja",
        None,
        "<|im_end|>",
        _CHATML,
        (
            (
                "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}",
                "{{- '<|im_start|>' + message.role + '\\n' }}{%- if message.role == 'assistant' %}"
                + GEN
                + "{{- message.content + '<|im_end|>' }}"
                + END
                + "{%- else %}{{- message.content + '<|im_end|>' }}"
                + "{%- endif %}{{- '\\n' }}",
            ),
        ),
    ),
    "qwen3-0.6b": Stock(
        "qwen3-0.6b.jinja",
        None,
        "<|im_end|>",
        _CHATML,
        (
            (
                "'\\n</think>\\n\\n' + content.lstrip('\\n') }}",
                "'\\n</think>\\n\\n' }}" + GEN + "{{- content.lstrip('\\n') }}" + END,
            ),
            (
                "{%- else %}\n                {{- '<|im_start|>' + message.role + '\\n' + content }}",
                "{%- else %}\n                {{- '<|im_start|>' + message.role + '\\n' }}"
                + GEN
                + "{{- content }}"
                + END,
            ),
            (
                "{%- else %}\n            {{- '<|im_start|>' + message.role + '\\n' + content }}",
                "{%- else %}\n            {{- '<|im_start|>' + message.role + '\\n' }}" + GEN + "{{- content }}" + END,
            ),
            (
                _QWEN3_CLOSE,
                "        "
                + GEN
                + "{{- '<|im_end|>' }}"
                + END
                + "{{- '\\n' }}\n    {%- elif message.role == \"tool\" %}",
            ),
        ),
    ),
    "mistral-7b-instruct-v0.2": Stock(
        "mistral-7b-instruct-v0.2.jinja",
        "<s>",
        "</s>",
        ("[INST]", "[/INST]"),
        (("{{ message['content'] + eos_token}}", GEN + "{{ message['content'] + eos_token}}" + END),),
    ),
    "mistral-7b-instruct-v0.3": Stock(
        "mistral-7b-instruct-v0.3.jinja",
        "<s>",
        "</s>",
        ("[INST]", "[/INST]"),
        (
            (
                '{{- " " + message["content"]|trim + eos_token}}',
                '{{- " " }}' + GEN + '{{- message["content"]|trim + eos_token}}' + END,
            ),
        ),
    ),
    "gemma-2-2b-it": Stock(
        "gemma-2-2b-it.jinja",
        "<bos>",
        "<end_of_turn>",
        ("<start_of_turn>",),
        (
            (
                "{{ '<start_of_turn>' + role + '\n' + message['content'] | trim + '<end_of_turn>\n' }}",
                "{{ '<start_of_turn>' + role + '\n' }}{% if role == 'model' %}"
                + GEN
                + "{{ message['content'] | trim + '<end_of_turn>' }}"
                + END
                + "{% else %}{{ message['content'] | trim + '<end_of_turn>' }}{% endif %}{{ '\n' }}",
            ),
        ),
    ),
    "phi-3-mini-4k-instruct": Stock(
        "phi-3-mini-4k-instruct.jinja",
        "<s>",
        "<|end|>",
        ("<|user|>", "<|assistant|>", "<|system|>"),
        (
            (
                "{{message['content'] + '<|end|>' + '\n'}}",
                GEN + "{{message['content'] + '<|end|>'}}" + END + "{{ '\n' }}",
            ),
        ),
    ),
    "smollm2-135m-instruct": Stock(
        "smollm2-135m-instruct.jinja",
        None,
        "<|im_end|>",
        _CHATML,
        (
            (
                "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}",
                "{{'<|im_start|>' + message['role'] + '\n'}}{% if message['role'] == 'assistant' %}"
                + GEN
                + "{{ message['content'] + '<|im_end|>' }}"
                + END
                + "{% else %}{{ message['content'] + '<|im_end|>' }}{% endif %}{{ '\n' }}",
            ),
        ),
    ),
    # Refused at adoption (it drops reasoning and has no switch to turn it off): no twin needed.
    "deepseek-r1": Stock(
        "deepseek-r1.jinja",
        "<｜begin▁of▁sentence｜>",
        "<｜end▁of▁sentence｜>",
        ("<｜User｜>", "<｜Assistant｜>"),
        (),
    ),
}
USABLE = sorted(name for name, stock in STOCK.items() if stock.twin)


def template(model: str) -> str:
    return (DATA / STOCK[model].file).read_text()


def twin(model: str, text: str | None = None) -> str:
    """The model's template (or `text`, a template that contains it) with generation blocks."""
    original = template(model)
    made = original
    for old, new in STOCK[model].twin:
        assert made.count(old) == 1, (model, old)
        made = made.replace(old, new)
    return made if text is None else text.replace(original, made)


@cache
def _trained(max_length: int):
    return train_tokenizer(CORPUS, vocab_size=300, max_turns=10, max_length=max_length)


def stock_tokenizer(model: str, max_length: int = 3072):
    """A byte-level BPE tokenizer with the model's special tokens, BOS/EOS and real chat template."""
    stock = STOCK[model]
    tokenizer = copy.deepcopy(_trained(max_length))  # trained once: each model adds its own tokens to a copy
    tokenizer.add_special_tokens({"additional_special_tokens": [t for t in (stock.bos, stock.eos, *stock.others) if t]})
    tokenizer.eos_token = stock.eos
    tokenizer.bos_token = stock.bos
    tokenizer.chat_template = template(model)
    return tokenizer


def stock_checkpoint(path: Path, model: str, max_length: int = 3072) -> Path:
    """A randomly initialised tiny Llama whose tokenizer carries `model`'s real chat template (no
    generation blocks, as shipped), its generation ending on the model's end-of-turn token: a stand-in,
    on CPU, for the downloaded instruct checkpoint."""
    tokenizer = stock_tokenizer(model, max_length=max_length)
    built = build_model(tokenizer, hidden_size=32, layers=2, heads=2, max_length=max_length)
    for config in (built.config, built.generation_config):
        config.eos_token_id = tokenizer.eos_token_id
        config.bos_token_id = tokenizer.bos_token_id
    return save_checkpoint(built, tokenizer, path)


def check_the_trained_chain_kept_the_template(project: Path, record: dict, max_turns: int) -> None:
    """In a project whose backend chain ran on an adopted stock checkpoint: adoption recorded how the
    template carries the system message (`record`), the SWEET-RL policy keeps the adopted template, and
    the critic's training sequences, made from the rollouts, carry the task's reference solution."""
    manifest = read_manifest(project / "models/backend/base")
    assert {k: v for k, v in manifest["chat_template"].items() if k != "system_folded_because"} == record
    assert manifest["params"]["chat_template"] == {"date": DATE.isoformat()}
    _, adopted = load_checkpoint(project / "models/backend/base")
    _, policy = load_checkpoint(project / "models/backend/policies/sweet/seed0")
    assert policy.chat_template == adopted.chat_template
    _, critic = load_checkpoint(project / "models/backend/critics/with_info")
    tasks = {t["task_id"]: t for t in pl.read_parquet(project / "data/backend/tasks/train.parquet").to_dicts()}
    dialogues = dialogues_by_trajectory(pl.read_parquet(project / "data/backend/rollout/trajectories.parquet"))
    (task_id, _), dialogue = next(iter(dialogues.items()))
    chat = chat_for(dialogue_view(tasks[task_id], dialogue, max_turns), tasks[task_id]["ground_truth"])
    sequence = segmented(critic, chat, "turns", 100_000)
    assert "".join(tasks[task_id]["ground_truth"].split()) in "".join(critic.decode(sequence.input_ids).split())
