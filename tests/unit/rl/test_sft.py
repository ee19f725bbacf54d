"""The SFT loop on CPU: it learns, it is deterministic, and its LoRA and bf16 paths run; the
accelerate configs for GPUs parse."""

from __future__ import annotations

import json
import math

import pytest
import torch
from accelerate.commands.config.config_args import load_config_from_file
from accelerate.state import AcceleratorState
from transformers import LlamaForCausalLM

from sweetflow.models.tiny import build_model, tokenizer_corpus, train_tokenizer
from sweetflow.params import LoraParams, ModelParams
from sweetflow.rl.sft import demo_chats, encode_chats, train_sft
from tests.support.params import model_params, training_params
from tests.support.project import ROOT


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
    return model_params(**{"hidden_size": 64, "epochs": 1, "batch_size": 4, "learning_rate": 5e-3, **kw})


def train(data, tmp_path, p: ModelParams, n: int = 8, **engine):
    tok, examples = data
    model = build_model(tok, hidden_size=p.hidden_size, max_length=1536, seed=p.seed)
    # Held-out = the training examples themselves: the loss measured on the data it learns from.
    return train_sft(model, examples[:n], examples[:n], p, training_params(**engine), tok.pad_token_id, tmp_path / "live")


def test_sft_lowers_the_loss_on_its_data_and_is_deterministic(data, tmp_path):
    p = params(epochs=3)
    fitted = train(data, tmp_path / "a", p)
    summary = fitted.summary
    assert summary["steps"] == 6 and fitted.timing["tokens_per_s"] > 0 and "tokens_per_s" not in summary
    assert summary["eval_loss_final"] < summary["eval_loss_initial"] - 0.5
    again = train(data, tmp_path / "b", p)
    assert again.summary == summary  # what the metrics record is the same for the same inputs
    for (name, a), b in zip(fitted.model.state_dict().items(), again.model.state_dict().values()):
        assert torch.equal(a, b), name
    assert set(fitted.state) == set(fitted.model.state_dict())
    live = json.loads((tmp_path / "a/live/metrics.json").read_text())
    assert live["step"] == 6 and live["eval"]["loss"] == summary["eval_loss_final"]
    assert (tmp_path / "a/live/metrics.json").read_bytes() == (tmp_path / "b/live/metrics.json").read_bytes()
    assert (tmp_path / "a/live/plots/metrics/train/loss.tsv").read_text().count("\n") == 2  # header + step 6


def test_lora_trains_adapters_and_saves_a_plain_merged_model(data, tmp_path):
    tok, examples = data
    base = build_model(tok, hidden_size=64, max_length=1536, seed=0)
    before = {k: v.clone() for k, v in base.state_dict().items()}
    engine = training_params(lora=LoraParams(r=4, alpha=8, dropout=0.0, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"]))
    fitted = train_sft(base, examples[:4], [], params(), engine, tok.pad_token_id, tmp_path / "live")
    model, state, summary = fitted.model, fitted.state, fitted.summary
    assert type(model) is LlamaForCausalLM and state is None and summary["steps"] == 1
    after = model.state_dict()
    assert set(after) == set(before)  # no adapter weights left: merged
    changed = [k for k in before if not torch.equal(before[k], after[k])]
    assert changed and all(k.split(".")[-2] in {"q_proj", "k_proj", "v_proj", "o_proj"} for k in changed)


def test_bf16_and_gradient_checkpointing_run_on_cpu(data, tmp_path):
    fitted = train(data, tmp_path, params(), n=4, precision="bf16", gradient_checkpointing=True)
    model, summary = fitted.model, fitted.summary
    assert summary["steps"] == 1 and math.isfinite(summary["train_loss_last_epoch"])
    assert next(model.parameters()).dtype == torch.float32  # mixed precision keeps fp32 weights
    assert model.config.use_cache and not model.is_activation_checkpointing


@pytest.mark.parametrize("name, kind", [("zero3.yaml", "DEEPSPEED"), ("fsdp.yaml", "FSDP")])
def test_accelerate_configs_for_gpus_parse(name, kind):
    config = load_config_from_file(str(ROOT / "configs/accelerate" / name))
    assert config.distributed_type.value == kind and config.mixed_precision == "bf16"
