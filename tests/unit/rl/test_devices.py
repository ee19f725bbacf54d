"""Every tensor that meets a model is made on the model's device. The same tests run on each device of
the `device` fixture (tests/support/devices.py): the CPU, a second device emulated on the CPU that
refuses a CPU tensor as CUDA does (so `make test` on a CPU-only machine catches a CPU index meeting a
GPU model), and a CUDA GPU under `make test-gpu`, each compared with the CPU's numbers: reference
log-probs, shared-prefix log-probs and their gradients, the critic's scores and drift, generation with
prefix reuse, and a training step of each loss."""

from __future__ import annotations

import copy

import pytest
import torch

from sweetflow.agents.transformers import sample
from sweetflow.core.params import TrainerParams
from sweetflow.rl.batching import collate_shared_prefix
from sweetflow.rl.drift import mean_token_kl
from sweetflow.rl.logprobs import reference_segment_logps, segment_logps
from sweetflow.rl.loop import TrainRun
from sweetflow.rl.loss import PreferenceLoss
from sweetflow.rl.preference import ScoredPairs, train_preference
from sweetflow.rl.ranking import score_candidates
from sweetflow.rl.sequences import NOT_SCORED, PairData, SegmentedSequence
from sweetflow.rl.sft import Example, train_sft
from tests.support.devices import OTHER, elsewhere, place, plain
from tests.support.models import BOS, END, PAD, tiny_llama
from tests.support.params import training_params

X = NOT_SCORED
# Two states, the first with three candidate turns: rows that share a prefix read it once, from a cache.
SEQUENCES = [
    SegmentedSequence([BOS, 12, 13, 6, 7, END], [X, X, X, 0, 0, 0]),
    SegmentedSequence([BOS, 12, 13, 8, 9, 9, END], [X, X, X, 0, 0, 0, 0]),
    SegmentedSequence([BOS, 12, 13, 10, END, 14, 6, END], [X, X, X, 0, 0, X, 1, 1]),
    SegmentedSequence([BOS, 15, 6, END], [X, X, 0, 0]),
]


def close(device: torch.device) -> dict:
    """How near a device's floats are to the CPU's: a GPU has kernels of its own; on OTHER attention runs
    torch's composite kernel instead of the CPU's fused one."""
    return {"atol": 1e-4, "rtol": 1e-4} if device.type == "cuda" else {"atol": 1e-5, "rtol": 1e-5}


def test_the_reference_log_probs_are_read_on_the_models_device(device):
    model = tiny_llama(seed=7)
    on_cpu = reference_segment_logps(model, SEQUENCES, batch_size=3, pad_id=PAD)
    there = reference_segment_logps(place(copy.deepcopy(model), device), SEQUENCES, batch_size=3, pad_id=PAD)
    # Back on the CPU, where training's batches are collated and from where they are saved.
    assert there.sums.device.type == there.counts.device.type == "cpu"
    torch.testing.assert_close(there.sums, on_cpu.sums, **close(device))
    assert torch.equal(there.counts, on_cpu.counts)


def test_shared_prefix_log_probs_and_their_gradients_on_the_models_device(device):
    model = tiny_llama(seed=3)
    batch = collate_shared_prefix(SEQUENCES, PAD)
    weights = torch.tensor([1.0, 2.0])  # segments weighted differently
    sums, _ = segment_logps(model, batch, 2)
    (sums * weights).sum().backward()
    grads = {name: q.grad for name, q in model.named_parameters()}
    there = place(copy.deepcopy(model), device)
    there.zero_grad()
    sums_there, _ = segment_logps(there, {k: v.to(device) for k, v in batch.items()}, 2)
    (sums_there * weights.to(device)).sum().backward()
    torch.testing.assert_close(plain(sums_there).cpu(), sums, **close(device))
    for name, q in there.named_parameters():
        torch.testing.assert_close(plain(q.grad).cpu(), grads[name], **close(device))


def test_the_critics_scores_and_drift_on_the_models_device(device):
    critic, reference = tiny_llama(seed=1), tiny_llama(seed=2)
    on_cpu = score_candidates(critic, reference, SEQUENCES, 2, PAD, length_normalize=True)
    kl_cpu = mean_token_kl(critic, reference, SEQUENCES, 2, PAD)
    critic, reference = place(critic, device), place(reference, device)
    there = score_candidates(critic, reference, SEQUENCES, 2, PAD, length_normalize=True)
    assert there.score == pytest.approx(on_cpu.score, abs=1e-4)
    assert mean_token_kl(critic, reference, SEQUENCES, 2, PAD) == pytest.approx(kl_cpu, rel=1e-3)


def generate(model, device: torch.device, temperature: float, prompts: list[list[int]], prefixes=None):
    """`sample` as the transformers agent calls it: one generator per row, on the model's device (a CPU
    generator for OTHER, whose numbers are the CPU's)."""
    where = device if device.type == "cuda" else "cpu"
    generators = [torch.Generator(where).manual_seed(row) for row in range(len(prompts))]
    stop = torch.tensor([END], device=device)
    return sample(model, prompts, generators, temperature, 0.9, 6, 64, stop, PAD, prefixes)


def test_generation_runs_on_the_models_device_and_reuses_its_prefixes_there(device):
    model = tiny_llama(seed=11)
    there = place(copy.deepcopy(model), device)
    prompts = [[BOS, 12, 13, 6], [BOS, 12, 13, 6], [BOS, 15, 7]]  # equal prompts: one pass, its cache copied
    cpu = torch.device("cpu")

    def agree(got: list, want: list) -> None:
        assert [tokens for tokens, _, _ in got] == [tokens for tokens, _, _ in want]
        for (_, logps, _), (_, logps_cpu, _) in zip(got, want):
            assert logps == pytest.approx(logps_cpu, abs=1e-4)

    agree(generate(there, device, 0.0, prompts), generate(model, cpu, 0.0, prompts))
    sampled = generate(there, device, 1.0, prompts)
    assert all(tokens and all(0 <= t < 16 for t in tokens) for tokens, _, _ in sampled)
    if device.type != "cuda":  # the same generators draw the same numbers as on the CPU
        agree(sampled, generate(model, cpu, 1.0, prompts))
    # A second turn that reads only its new tokens, from the keys and values kept on the device.
    first = generate(there, device, 0.0, prompts, [None] * len(prompts))
    turns = [p + tokens + [14, 15] for p, (tokens, _, _) in zip(prompts, first)]
    reused = generate(there, device, 0.0, turns, [prefix for _, _, prefix in first])
    assert [t for t, _, _ in reused] == [t for t, _, _ in generate(there, device, 0.0, turns)]


def test_a_cpu_tensor_meeting_a_model_elsewhere_fails_as_on_a_gpu():
    """The emulated device is worth its tests only if it refuses what a GPU refuses."""
    with elsewhere():
        model = place(tiny_llama(), OTHER)
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
            model(input_ids=torch.tensor([[BOS, 6]]))
        logits = model(input_ids=torch.tensor([[BOS, 6]], device=OTHER)).logits
        assert logits.device == OTHER and torch.isfinite(plain(logits)).all()
        assert (plain(logits) + torch.tensor(1.0)).shape == logits.shape  # a CPU scalar is allowed, as on CUDA


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def real_device(request) -> torch.device:
    """The devices training runs on: accelerate places the model itself, which the emulated one is not."""
    if request.param == "cuda" and not torch.cuda.is_available():
        pytest.skip("no CUDA GPU is visible (make test-gpu runs it on one)")
    return torch.device(request.param)


def test_a_preference_step_and_an_sft_step_train_on_the_device(tmp_path, real_device):
    def run(name: str) -> TrainRun:
        trainer = TrainerParams(seed=0, epochs=1, learning_rate=1e-3, batch_size=2)
        engine = training_params(lora=None)
        return TrainRun(trainer=trainer, engine=engine, log_dir=tmp_path / name, name=name, device=real_device.type)

    data = PairData(SEQUENCES[:2] * 2, [(0, 1), (2, 3)])
    model = tiny_llama(seed=0).to(real_device)
    ref = reference_segment_logps(model, data.sequences, 4, PAD)
    fitted = train_preference(model, ScoredPairs(data, ref), PreferenceLoss(0.1, True), run=run("dpo"), pad_id=PAD)
    assert next(fitted.model.parameters()).device.type == real_device.type and fitted.summary["steps"] == 1
    examples = [Example([BOS, 12, 13, 6, END], [-100, -100, 13, 6, END])] * 2
    fitted = train_sft(tiny_llama(seed=0).to(real_device), examples, [], run=run("sft"), pad_id=PAD)
    assert next(fitted.model.parameters()).device.type == real_device.type and fitted.summary["steps"] == 1
