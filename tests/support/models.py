"""A randomly initialised Llama small enough for a unit test of anything that runs a causal LM."""

from __future__ import annotations

import torch
from transformers import LlamaConfig, LlamaForCausalLM

PAD, BOS, END = 0, 1, 5  # the special ids of the tests' hand-made token sequences


def tiny_llama(seed: int = 0, vocab: int = 16) -> LlamaForCausalLM:
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=vocab,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=64,
        pad_token_id=PAD,
        bos_token_id=BOS,
        eos_token_id=END,
    )
    return LlamaForCausalLM(config)
