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

from sweetflow.core.params import LoraParams, ModelParams
from sweetflow.models.tiny import build_model, tokenizer_corpus, train_tokenizer
from sweetflow.rl.loop import TrainRun
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
    tok = train_tokenizer(tokenizer_corpus(corpus.train, chats, 10), 384, 10, max_length=1536)
    examples, _ = encode_chats(tok, chats[:8], max_length=1536)
    return tok, examples


def params(**kw) -> ModelParams:
    return model_params(**{"hidden_size": 64, "epochs": 1, "batch_size": 4, "learning_rate": 5e-3, **kw})


def train(data, tmp_path, p: ModelParams, n: int = 8, **engine):
    tok, examples = data
    model = build_model(tok, hidden_size=p.hidden_size, max_length=1536, seed=p.seed)
    # Held-out = the training examples themselves: the loss measured on the data it learns from.
    run = TrainRun(trainer=p, engine=training_params(**engine), log_dir=tmp_path / "live", name="sft")
    return train_sft(model, examples[:n], examples[:n], run=run, pad_id=tok.pad_token_id)


def test_sft_lowers_the_loss_on_its_data_and_is_deterministic(data, tmp_path):
    p = params(epochs=3)
    fitted = train(data, tmp_path / "a", p)
    summary = fitted.summary
    assert summary["steps"] == 6 and fitted.run["tokens_per_s"] > 0 and "tokens_per_s" not in summary
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
    engine = training_params(
        lora=LoraParams(r=4, alpha=8, dropout=0.0, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"])
    )
    run = TrainRun(trainer=params(), engine=engine, log_dir=tmp_path / "live", name="sft")
    fitted = train_sft(base, examples[:4], [], run=run, pad_id=tok.pad_token_id)
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
    # The process count comes from the launch (training.processes, SLURM, the GPUs), and the
    # accumulation steps from the batch sizes: neither is fixed in the file.
    assert config.num_processes == -1 and "gradient_accumulation_steps" not in (config.deepspeed_config or {})


def test_accumulating_micro_batches_trains_as_one_pass_of_the_effective_batch(data, tmp_path):
    """The same effective batch of 8 in one pass, in 2 passes of 4 and in 8 passes of 1: each pass's
    loss is weighted by its share of the step's assistant tokens, so the gradient is the whole
    batch's and only the order of float additions tells the runs apart. AdamW divides each gradient
    by its own running size, which turns that rounding into a visible share of a step where a
    gradient is nearly 0 (a rare token's embedding): measured, the weights differ by at most 1.1e-5,
    0.2% of one step of learning rate 5e-3. A pass dropped or counted twice would differ by ~a step."""
    runs = {
        micro: train(data, tmp_path / str(micro), params(epochs=2, batch_size=8), micro_batch_size=micro)
        for micro in (None, 4, 1)
    }
    assert [r.run["accumulation_steps"] for r in runs.values()] == [1, 2, 8]
    assert {r.run["effective_batch"] for r in runs.values()} == {8} and runs[None].run["micro_batch"] == 8
    one = runs[None]
    start = build_model(data[0], hidden_size=64, max_length=1536, seed=0).state_dict()
    assert max((one.model.state_dict()[k] - w).abs().max().item() for k, w in start.items()) > 1e-3
    for fitted in (runs[4], runs[1]):
        assert fitted.summary["steps"] == one.summary["steps"] == 2
        for key in ("train_loss_last_epoch", "eval_loss_final"):
            assert fitted.summary[key] == pytest.approx(one.summary[key], abs=2e-5)
        differ = max((fitted.model.state_dict()[k] - w).abs().max().item() for k, w in one.model.state_dict().items())
        assert differ < 1e-4  # 2% of a step
