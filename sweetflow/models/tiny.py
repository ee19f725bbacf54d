"""The embedded default model: a byte-level BPE tokenizer and a tiny Llama, built here from scratch.

Nothing is downloaded: the tokenizer is trained on the texts we are given (the task corpus) with the
`tokenizers` library and the model is randomly initialised from a `LlamaConfig`. What comes out is
an ordinary Hugging Face checkpoint directory, so every consumer (in-process generation, training,
`transformers serve`, vLLM) treats it exactly like a real downloaded model such as Llama-3.1-8B.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator

import torch
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from sweetflow.views import every_policy_instructions

BOS = "<|begin|>"
EOS = "<|end|>"  # ends every message; the model emits it to end its turn, generation stops on it
PAD = "<|pad|>"
ROLES = ("system", "user", "assistant")
# Specials come first so that their ids (0..6) do not depend on the corpus.
SPECIAL_TOKENS = [PAD, BOS, EOS] + [f"<|{role}|>" for role in ROLES]


# The policy's instructions are left out of system messages, and whatever else a system message
# holds (the critic's training-time information) is kept: a model trained from scratch cannot read
# instructions, and they would be a quarter of every sequence it trains on and generates from. The
# instructions state the run's turn limit, so the template is made for it (`chat_template`).
def chat_template(max_turns: int) -> str:
    """`<|begin|><|system|>…<|end|><|user|>…<|end|><|assistant|>…<|end|>`. No whitespace around the
    role markers: every token the model sees is either a marker or content. The assistant's content
    and its closing EOS sit in a `{% generation %}` block so that
    `apply_chat_template(..., return_assistant_tokens_mask=True)` marks exactly the tokens a policy is
    trained on (content + the EOS that ends its turn). System messages lose the policy's instructions
    for episodes of at most `max_turns` turns."""
    elide = "".join(f" | replace({json.dumps(prompt)}, '')" for prompt in every_policy_instructions(max_turns))
    return (
        "{{ bos_token }}"
        "{% for message in messages %}"
        "{% if message['role'] not in ['system', 'user', 'assistant'] %}"
        "{{ raise_exception('unknown role: ' + message['role']) }}"
        "{% endif %}"
        "{{ '<|' + message['role'] + '|>' }}"
        "{% if message['role'] == 'assistant' %}"
        "{% generation %}{{ message['content'] }}{{ eos_token }}{% endgeneration %}"
        "{% elif message['role'] == 'system' %}"
        "{{ message['content']" + elide + " }}{{ eos_token }}"
        "{% else %}"
        "{{ message['content'] }}{{ eos_token }}"
        "{% endif %}"
        "{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|assistant|>' }}{% endif %}"
    )


PRE_TOKENIZERS = {
    "digits": lambda: pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False)]
    ),
    # Each line with its newline is one piece; ByteLevel then only maps bytes (no GPT-2 word split).
    "lines": lambda: pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(r"[^\n]*\n|[^\n]+"), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    ),
}


def train_tokenizer(
    texts: Iterable[str], vocab_size: int, max_turns: int, max_length: int = 512, pre_tokenizer: str = "digits"
) -> PreTrainedTokenizerFast:
    """Train a byte-level BPE on `texts` and wrap it as a Hugging Face fast tokenizer, whose chat
    template leaves out the policy's instructions for episodes of at most `max_turns` turns.

    Byte-level: any string encodes (the 256 byte symbols are always in the vocabulary), so unseen
    characters in a task never break the pipeline. What BPE may merge (`pre_tokenizer`):
    - "digits" (code and prose): words as GPT-2 splits them, and digits as single tokens: with
      whole-number tokens a tiny model mis-copies values it was told (told 86, writes 89), with
      single digits it copies them (45% vs 80–99% success, docs/calibration.md);
    - "lines" (markup): anything within a line, up to the whole line. A procedural page is ~60
      lines of recurring markup: it takes ~77 tokens at a vocabulary of 8,192 against ~1,060 with
      "digits" (docs/frontend.md), so a whole design dialogue fits a tiny model's context.

    No BOS is added by `tokenizer(text)`: the chat template writes it, and adding it in both places
    would double it. Callers tokenising plain text add `tokenizer.bos_token` themselves if wanted.
    """
    n_fixed = len(SPECIAL_TOKENS) + len(pre_tokenizers.ByteLevel.alphabet())
    if vocab_size < n_fixed:
        raise ValueError(f"vocab_size={vocab_size} is below the {n_fixed} special and byte tokens")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = PRE_TOKENIZERS[pre_tokenizer]()
    tok.decoder = decoders.ByteLevel()
    # trim_offsets=False keeps character offsets exact, which the assistant-token mask relies on.
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=BOS,
        eos_token=EOS,
        pad_token=PAD,
        chat_template=chat_template(max_turns),
        model_max_length=max_length,
        clean_up_tokenization_spaces=False,
    )


def tiny_config(
    vocab_size: int,
    hidden_size: int = 128,
    layers: int = 2,
    heads: int = 4,
    max_length: int = 512,
    intermediate_size: int | None = None,
    **overrides,
) -> LlamaConfig:
    """The tiny Llama's configuration, the one place its shape is spelled: by default the calibrated
    one of docs/calibration.md (2 layers, hidden 128, 4 heads, tied embeddings). Tied input and output
    embeddings keep the vocabulary's share of a tiny model small. The MLP has Llama's width, 8/3 of the
    model's (344 for 128): at these sizes a 4x-wide MLP trains ~15% slower for no better model.
    `overrides` are LlamaConfig's own keywords (special ids, untied embeddings for a test's model)."""
    if hidden_size % heads:
        raise ValueError(f"hidden_size={hidden_size} is not divisible by heads={heads}")
    return LlamaConfig(
        **{
            "vocab_size": vocab_size,
            "hidden_size": hidden_size,
            "intermediate_size": intermediate_size or math.ceil(8 * hidden_size / 3 / 8) * 8,
            "num_hidden_layers": layers,
            "num_attention_heads": heads,
            "num_key_value_heads": heads,
            "max_position_embeddings": max_length,
            "tie_word_embeddings": True,
            **overrides,
        }
    )


def build_model(
    tokenizer: PreTrainedTokenizerFast,
    hidden_size: int = 128,
    layers: int = 2,
    heads: int = 4,
    max_length: int = 512,
    seed: int = 0,
    intermediate_size: int | None = None,
) -> LlamaForCausalLM:
    """A randomly initialised Llama of `tiny_config`'s shape, with the tokenizer's special ids wired in.
    The same seed gives the same weights; the global torch RNG is left as it was, so building a model
    does not change the random stream of whatever runs next."""
    ids = {name: tokenizer.convert_tokens_to_ids(tok) for name, tok in (("bos", BOS), ("eos", EOS), ("pad", PAD))}
    config = tiny_config(
        len(tokenizer),
        hidden_size=hidden_size,
        layers=layers,
        heads=heads,
        max_length=max_length,
        intermediate_size=intermediate_size,
        bos_token_id=ids["bos"],
        eos_token_id=ids["eos"],
        pad_token_id=ids["pad"],
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    # Plain ancestral sampling at temperature 1 by default (the paper samples the policy at T=1.0).
    # do_sample must be on in the checkpoint: `transformers serve` copies this config and only
    # overrides the temperature, so with do_sample off a request at temperature 1.0 would be
    # answered greedily. top_k=0 turns off the library's implicit top-k of 50, so sampled actions
    # follow the same distribution whose log-probs the critic and DPO losses compute.
    model.generation_config = GenerationConfig(
        bos_token_id=ids["bos"],
        eos_token_id=ids["eos"],
        pad_token_id=ids["pad"],
        do_sample=True,
        temperature=1.0,
        top_k=0,
        top_p=1.0,
    )
    return model


def tokenizer_corpus(tasks: list[dict], chats: list[list[dict]], max_turns: int) -> Iterator[str]:
    """What the tokenizer learns its merges from: every task's description, hidden facts and
    reference code, and the demonstrations as the model will read them: the tiny model's chat
    template leaves the policy's instructions (for `max_turns` turns) out, so they are left out here too."""
    instructions = every_policy_instructions(max_turns)
    for task in tasks:
        yield task["problem_description"]
        yield from (fact["fact"] for fact in task.get("facts") or [])
        yield task["ground_truth"]
    for chat in chats:
        yield from (message["content"] for message in chat if message["content"] not in instructions)
