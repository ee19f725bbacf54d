"""Test infrastructure: a tiny, randomly initialised vision-language checkpoint built here.

A LLaVA (CLIP vision tower + Llama) of ~60k parameters with a byte-level BPE tokenizer trained on
a few lines, an `<image>` token and a chat template that writes it where a message has an image
part. `transformers serve` recognises LlavaForConditionalGeneration as image-text-to-text, loads
its LlavaProcessor, and accepts OpenAI `image_url` content parts with base64 data URLs, so the
design simulator's real request path is exercised offline (nothing is downloaded). It talks
nonsense, fast: 28x28-pixel images, four image tokens each.
"""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import (
    CLIPImageProcessorPil,
    CLIPVisionConfig,
    GenerationConfig,
    LlavaConfig,
    LlavaForConditionalGeneration,
    LlavaProcessor,
)

from sweetflow.models.tiny import BOS, EOS, PAD, tiny_config, train_tokenizer

IMAGE_TOKEN = "<image>"
IMAGE_SIDE, PATCH = 28, 14
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}{{ '<|' + message['role'] + '|>' }}"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}" + IMAGE_TOKEN + "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}{{ eos_token }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>' }}{% endif %}"
)
CORPUS = ["The header should be green, not gray.", "Add a footer with links.", "That looks like my page."] * 10


def build_tiny_vlm(dest: Path) -> Path:
    tokenizer = train_tokenizer(CORPUS, vocab_size=300, max_turns=10)
    tokenizer.add_special_tokens({"additional_special_tokens": [IMAGE_TOKEN]})
    tokenizer.chat_template = CHAT_TEMPLATE
    processor = LlavaProcessor(
        image_processor=CLIPImageProcessorPil(
            size={"shortest_edge": IMAGE_SIDE}, crop_size={"height": IMAGE_SIDE, "width": IMAGE_SIDE}
        ),
        tokenizer=tokenizer,
        patch_size=PATCH,
        vision_feature_select_strategy="default",  # drops CLS: (28/14)^2 = 4 tokens per image
        num_additional_image_tokens=1,
        chat_template=CHAT_TEMPLATE,
        image_token=IMAGE_TOKEN,
    )
    ids = {name: tokenizer.convert_tokens_to_ids(t) for name, t in (("bos", BOS), ("eos", EOS), ("pad", PAD))}
    config = LlavaConfig(
        vision_config=CLIPVisionConfig(
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=1,
            num_attention_heads=2,
            image_size=IMAGE_SIDE,
            patch_size=PATCH,
            projection_dim=32,
        ),
        text_config=tiny_config(
            len(tokenizer),
            hidden_size=32,
            layers=1,
            heads=2,
            intermediate_size=64,
            max_length=4096,
            tie_word_embeddings=False,
            bos_token_id=ids["bos"],
            eos_token_id=ids["eos"],
            pad_token_id=ids["pad"],
        ),
        image_token_index=tokenizer.convert_tokens_to_ids(IMAGE_TOKEN),
        vision_feature_layer=-1,
        vision_feature_select_strategy="default",
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = LlavaForConditionalGeneration(config)
    model.generation_config = GenerationConfig(
        bos_token_id=ids["bos"], eos_token_id=ids["eos"], pad_token_id=ids["pad"]
    )
    model.save_pretrained(dest)
    processor.save_pretrained(dest)
    return dest
