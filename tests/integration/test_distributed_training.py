"""The GPU path as far as a machine without GPUs goes: the same SFT and preference training run once
as one process accumulating gradients and once as two processes under `accelerate launch` (gloo on
the CPU), with the same effective batch. Both must record that batch and learn the same thing.

Two processes on CPUs: `accelerate launch --cpu` starts one process unless MPI is installed (its
multi-CPU launcher is mpirun), so the config asks for its torchrun launcher (`MULTI_GPU`) and
ACCELERATE_USE_CPU=1 puts the processes on the CPU, where they talk through gloo.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

from sweetflow.models.checkpoint import load_checkpoint, pad_id
from sweetflow.rl.logprobs import reference_segment_logps
from sweetflow.rl.sequences import PairData, group_pairs, segmented
from sweetflow.rl.sft import demo_chats, encode_chats
from tests.support.chat_templates import stock_checkpoint
from tests.support.params import training_params
from tests.support.project import ROOT, tool_env

CPU_CONFIG = "configs/accelerate/cpu2.yaml"  # two gloo processes on the CPUs
MAX_LENGTH = 3072  # the stock checkpoint's context
TRAINER = {"seed": 0, "epochs": 2, "learning_rate": 5e-3, "batch_size": 8}
# params.yaml's training section on one thread, one process, without accumulation; each test changes a few knobs.
ENGINE = training_params(
    threads=1, precision="fp32", accelerate_config=None, processes=None, micro_batch_size=None
).model_dump(mode="json")
LORA = {"r": 4, "alpha": 8, "dropout": 0.0, "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj"]}
# Nothing but the order of additions differs: one process adds its two passes' gradients, gloo adds
# the two processes' one each, and both halve the sum. With two summands a + b is b + a and halving
# is exact, so the two runs agree to the bit (with more passes they would agree up to float
# rounding, ~1e-7 relative: see tests/unit/rl/test_sft.py). A pass dropped or counted twice moves
# the weights by ~1e-3 (a step of learning rate 5e-3).


@pytest.fixture(scope="module")
def inputs(corpus, tmp_path_factory):
    """A tiny checkpoint with a stock Llama-3 chat template (no generation blocks: its assistant
    masks are found by rendering), and real dialogues as SFT examples and as preference pairs in
    groups of two."""
    root = tmp_path_factory.mktemp("distributed")
    model, tok = load_checkpoint(stock_checkpoint(root / "model", "llama-3.1-8b-instruct"))
    chats = demo_chats(corpus.train, corpus.demos)
    examples, cut = encode_chats(tok, chats, MAX_LENGTH)
    sequences = [segmented(tok, chat, "turns", MAX_LENGTH) for chat in chats]
    assert len(examples) == len(sequences) == 16 and not cut and all(sequences)
    # Each dialogue against the next: 16 pairs, the pairs of two dialogues in one group.
    pairs = [(i, (i + 1) % 16) for i in range(16)]
    data = PairData(sequences, pairs, group_pairs([f"g{i // 2}" for i in range(16)]))
    torch.set_num_threads(1)
    reference = reference_segment_logps(model, sequences, 8, pad_id(tok))
    torch.save({"examples": examples, "pairs": data, "reference": reference}, root / "data.pt")
    return root


def run(inputs, name: str, engine: dict, env: dict | None = None) -> dict:
    out = inputs / name
    out.mkdir()
    spec = {
        "checkpoint": str(inputs / "model"),
        "data": str(inputs / "data.pt"),
        "out": str(out),
        "trainer": TRAINER,
        "engine": {**ENGINE, **engine},
    }
    (out / "spec.json").write_text(json.dumps(spec))
    env = {**tool_env(), "PYTHONPATH": str(ROOT), **(env or {})}
    result = subprocess.run(
        [sys.executable, "-m", "tests.support.fit_run", str(out / "spec.json")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    results = json.loads((out / "results.json").read_text())
    for kind in results:
        results[kind]["weights"] = torch.load(out / f"{kind}.pt")
    return results


@pytest.mark.parametrize(
    "engine, env",
    [
        ({"processes": 2}, {}),  # the process count from params
        # LoRA and gradient checkpointing; the process count from the SLURM job's GPUs
        ({"lora": LORA, "gradient_checkpointing": True}, {"SLURM_GPUS_ON_NODE": "2"}),
    ],
    ids=["full", "lora-checkpointing"],
)
def test_two_processes_learn_what_one_accumulating_process_learns(inputs, engine, env):
    name = "lora" if engine.get("lora") else "full"
    one = run(inputs, f"{name}-one", {**engine, "processes": None, "micro_batch_size": 4})
    two = run(
        inputs,
        f"{name}-two",
        {**engine, "micro_batch_size": 4, "accelerate_config": CPU_CONFIG},
        {**env, "ACCELERATE_USE_CPU": "1"},
    )
    for kind in ("sft", "preference"):
        a, b = one[kind], two[kind]
        assert a["run"]["effective_batch"] == b["run"]["effective_batch"] == 8
        assert (a["run"]["processes"], a["run"]["accumulation_steps"]) == (1, 2)
        assert (b["run"]["processes"], b["run"]["accumulation_steps"]) == (2, 1)
        assert a["run"]["micro_batch"] == b["run"]["micro_batch"] == 4
        assert a["summary"]["steps"] == b["summary"]["steps"] == 4
        assert a["summary"]["train_tokens"] == b["summary"]["train_tokens"]  # the same data, each once an epoch
        assert a["summary"] == b["summary"]  # the losses and evaluations, to the bit
        moved = max((a["weights"][k] - w).abs().max().item() for k, w in base_weights(inputs).items())
        assert moved > 1e-3, kind  # it learned something
        assert all(torch.equal(a["weights"][k], b["weights"][k]) for k in a["weights"]), kind


def base_weights(inputs) -> dict:
    from safetensors.torch import load_file

    return load_file(inputs / "model/model.safetensors")


def test_launch_without_gpus_or_a_process_count_is_refused(inputs):
    spec = {
        "checkpoint": str(inputs / "model"),
        "data": str(inputs / "data.pt"),
        "out": str(inputs / "refused"),
        "trainer": TRAINER,
        "engine": {**ENGINE, "accelerate_config": CPU_CONFIG},
    }
    (inputs / "refused.json").write_text(json.dumps(spec))
    env = {k: v for k, v in tool_env().items() if k != "SLURM_GPUS_ON_NODE"}
    result = subprocess.run(
        [sys.executable, "-m", "tests.support.fit_run", str(inputs / "refused.json")],
        cwd=ROOT,
        env={**env, "PYTHONPATH": str(ROOT), "CUDA_VISIBLE_DEVICES": ""},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode != 0
    assert "no GPU is visible and training.processes is null" in result.stderr
    assert not os.path.exists(inputs / "refused")
