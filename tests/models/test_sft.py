"""The SFT loop on CPU: it learns, it is deterministic, and its LoRA and bf16 paths run; the
accelerate configs for GPUs parse."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from accelerate.commands.config.config_args import load_config_from_file
from accelerate.state import AcceleratorState
from transformers import LlamaForCausalLM

from sweetflow.models.data import demo_chats, encode_chats, tokenizer_corpus
from sweetflow.models.sft import train_sft
from sweetflow.models.tiny import build_model, train_tokenizer
from sweetflow.params import LoraParams, ModelParams

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _fresh_accelerator_state():
    """Each test trains as a new process would: accelerate fixes the precision once per process."""
    AcceleratorState._reset_state(True)


@pytest.fixture(scope="module")
def data(corpus):
    chats = demo_chats(corpus.train, corpus.demos)
    tok = train_tokenizer(tokenizer_corpus(corpus.train, chats), 384, max_length=1536)
    examples, _ = encode_chats(tok, chats[:8], max_length=1536)
    return tok, examples


def params(**kw) -> ModelParams:
    return ModelParams(**{"hidden_size": 64, "epochs": 1, "batch_size": 4, "learning_rate": 5e-3, **kw})


def train(data, tmp_path, p: ModelParams, n: int = 8):
    tok, examples = data
    model = build_model(tok, hidden_size=p.hidden_size, max_length=1536, seed=p.seed)
    # Held-out = the training examples themselves: the loss measured on the data it learns from.
    return train_sft(model, examples[:n], examples[:n], p, tok.pad_token_id, tmp_path / "live")


def test_sft_lowers_the_loss_on_its_data_and_is_deterministic(data, tmp_path):
    p = params(epochs=3)
    model, state, summary = train(data, tmp_path / "a", p)
    assert summary["steps"] == 6 and summary["tokens_per_s"] > 0
    assert summary["eval_loss_final"] < summary["eval_loss_initial"] - 0.5
    again, _, summary_again = train(data, tmp_path / "b", p)
    assert summary_again["eval_loss_final"] == summary["eval_loss_final"]
    for (name, a), b in zip(model.state_dict().items(), again.state_dict().values()):
        assert torch.equal(a, b), name
    assert set(state) == set(model.state_dict())
    live = json.loads((tmp_path / "a/live/metrics.json").read_text())
    assert live["step"] == 6 and live["eval"]["loss"] == summary["eval_loss_final"]
    assert (tmp_path / "a/live/plots/metrics/train/loss.tsv").read_text().count("\n") == 2  # header + step 6


def test_lora_trains_adapters_and_saves_a_plain_merged_model(data, tmp_path):
    tok, examples = data
    base = build_model(tok, hidden_size=64, max_length=1536, seed=0)
    before = {k: v.clone() for k, v in base.state_dict().items()}
    p = params(lora=LoraParams(r=4, alpha=8, dropout=0.0))
    model, state, summary = train_sft(base, examples[:4], [], p, tok.pad_token_id, tmp_path / "live")
    assert type(model) is LlamaForCausalLM and state is None and summary["steps"] == 1
    after = model.state_dict()
    assert set(after) == set(before)  # no adapter weights left: merged
    changed = [k for k in before if not torch.equal(before[k], after[k])]
    assert changed and all(k.split(".")[-2] in {"q_proj", "k_proj", "v_proj", "o_proj"} for k in changed)


def test_bf16_and_gradient_checkpointing_run_on_cpu(data, tmp_path):
    model, _, summary = train(data, tmp_path, params(precision="bf16", gradient_checkpointing=True), n=4)
    assert summary["steps"] == 1 and math.isfinite(summary["train_loss_last_epoch"])
    assert next(model.parameters()).dtype == torch.float32  # mixed precision keeps fp32 weights
    assert model.config.use_cache and not model.is_activation_checkpointing


@pytest.mark.parametrize("name, kind", [("zero3.yaml", "DEEPSPEED"), ("fsdp.yaml", "FSDP")])
def test_accelerate_configs_for_gpus_parse(name, kind):
    config = load_config_from_file(str(ROOT / "configs/accelerate" / name))
    assert config.distributed_type.value == kind and config.mixed_precision == "bf16"
