"""A randomly initialised Llama small enough for a unit test of anything that runs a causal LM."""

from __future__ import annotations

import torch
from transformers import LlamaForCausalLM

from sweetflow.models.tiny import tiny_config

PAD, BOS, END = 0, 1, 5  # the special ids of the tests' hand-made token sequences


def tiny_llama(seed: int = 0, vocab: int = 16) -> LlamaForCausalLM:
    torch.manual_seed(seed)
    config = tiny_config(
        vocab,
        hidden_size=32,
        intermediate_size=64,
        max_length=64,
        tie_word_embeddings=False,
        pad_token_id=PAD,
        bos_token_id=BOS,
        eos_token_id=END,
    )
    return LlamaForCausalLM(config)
