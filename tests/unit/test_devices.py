"""The code that meets a model, on each device: the CPU here and in `make test`, a CUDA GPU under
`make test-gpu` (marker `gpu`, skipped where none is visible). The same test runs on both, so the CPU
run keeps the device paths of the GPU run exercised, and the GPU run compares them with the CPU's
numbers: log-probs, the critic's scores, its drift, a training step of each loss, and generation."""

from __future__ import annotations

import pytest
import torch

from sweetflow.agents.transformers import sample
from sweetflow.core.params import TrainerParams
from sweetflow.rl.drift import mean_token_kl
from sweetflow.rl.logprobs import reference_segment_logps
from sweetflow.rl.loop import TrainRun
from sweetflow.rl.loss import PreferenceLoss
from sweetflow.rl.preference import ScoredPairs, train_preference
from sweetflow.rl.ranking import score_candidates
from sweetflow.rl.sequences import NOT_SCORED, PairData, SegmentedSequence
from sweetflow.rl.sft import Example, train_sft
from tests.support.models import BOS, END, PAD, tiny_llama
from tests.support.params import training_params

X = NOT_SCORED
SEQUENCES = [
    SegmentedSequence([BOS, 2, 3, 4, 5, 6], [X, X, X, 0, 0, 0]),
    SegmentedSequence([BOS, 2, 3, 7, 8], [X, X, X, 0, 0]),  # shares its prefix with the first
    SegmentedSequence([BOS, 9, 10, 11], [X, X, 0, 0]),
]


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def device(request) -> torch.device:
    if request.param == "cuda" and not torch.cuda.is_available():
        pytest.skip("no CUDA GPU is visible (make test-gpu runs these on one)")
    return torch.device(request.param)


def test_reference_log_probs_on_a_device_are_the_cpus_and_come_back_to_the_cpu(device):
    on_cpu = reference_segment_logps(tiny_llama(0), SEQUENCES, 2, PAD)
    there = reference_segment_logps(tiny_llama(0).to(device), SEQUENCES, 2, PAD)
    assert there.sums.device.type == there.counts.device.type == "cpu"
    torch.testing.assert_close(there.sums, on_cpu.sums, rtol=1e-4, atol=1e-4)
    assert torch.equal(there.counts, on_cpu.counts)


def test_the_critics_scores_and_drift_on_a_device_are_the_cpus(device):
    critic, reference = tiny_llama(1), tiny_llama(2)
    on_cpu = score_candidates(critic, reference, SEQUENCES, 2, PAD, length_normalize=True)
    kl_cpu = mean_token_kl(critic, reference, SEQUENCES, 2, PAD)
    critic, reference = critic.to(device), reference.to(device)
    there = score_candidates(critic, reference, SEQUENCES, 2, PAD, length_normalize=True)
    assert there.score == pytest.approx(on_cpu.score, abs=1e-4)
    assert mean_token_kl(critic, reference, SEQUENCES, 2, PAD) == pytest.approx(kl_cpu, rel=1e-3)


def run(tmp_path, device: torch.device, name: str) -> TrainRun:
    trainer = TrainerParams(seed=0, epochs=1, learning_rate=1e-3, batch_size=2)
    return TrainRun(trainer=trainer, engine=training_params(lora=None), log_dir=tmp_path, name=name, device=device.type)


def test_a_preference_step_and_an_sft_step_train_on_the_device(tmp_path, device):
    data = PairData(SEQUENCES[:2] * 2, [(0, 1), (2, 3)])
    model = tiny_llama(0).to(device)
    ref = reference_segment_logps(model, data.sequences, 4, PAD)
    fitted = train_preference(
        model, ScoredPairs(data, ref), PreferenceLoss(0.1, True), run=run(tmp_path / "dpo", device, "dpo"), pad_id=PAD
    )
    assert next(fitted.model.parameters()).device.type == device.type and fitted.summary["steps"] == 1
    examples = [Example([BOS, 2, 3, 4, END], [-100, -100, 3, 4, END])] * 2
    fitted = train_sft(tiny_llama(0).to(device), examples, [], run=run(tmp_path / "sft", device, "sft"), pad_id=PAD)
    assert next(fitted.model.parameters()).device.type == device.type and fitted.summary["steps"] == 1


def test_generation_on_the_device_is_the_cpus_greedy_continuation(device):
    prompts = [[BOS, 2, 3], [BOS, 4, 5, 6]]

    def greedy(model) -> list[list[int]]:
        generators = [torch.Generator(model.device).manual_seed(i) for i in range(len(prompts))]
        stop = torch.tensor([END], device=model.device)
        return [ids for ids, _, _ in sample(model, prompts, generators, 0.0, 1.0, 4, 64, stop, PAD)]

    assert greedy(tiny_llama(3).to(device)) == greedy(tiny_llama(3))
