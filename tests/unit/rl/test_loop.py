"""The training loop: length-grouped batches keep every example and cut padding; an optimiser step's
batch is laid out over processes and accumulation steps, or refused; `fit` trains any `Objective`."""

from __future__ import annotations

import math
import random
import subprocess
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from sweetflow.core.params import ParamsError, TrainerParams
from sweetflow.rl.batching import LengthGroupedBatches, micro_batches
from sweetflow.rl.loop import (
    BatchLayout,
    Objective,
    StepResult,
    TrainRun,
    batch_layout,
    fit,
    launch_processes,
    lr_at,
)
from tests.support.params import training_params


def padded(batches: list[list[int]], lengths: list[int]) -> int:
    return sum(len(batch) * max(lengths[i] for i in batch) for batch in batches)


@settings(max_examples=60, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 2000), min_size=1, max_size=900),
    batch_size=st.integers(1, 16),
    seed=st.integers(0, 1000),
)
def test_every_epoch_holds_every_example_once_in_full_batches(lengths, batch_size, seed):
    sampler = LengthGroupedBatches(lengths, batch_size, seed)
    for _ in range(2):
        batches = list(sampler)
        assert len(batches) == len(sampler)
        assert sorted(i for batch in batches for i in batch) == list(range(len(lengths)))
        # Only the last window's last batch may be short.
        assert sum(len(batch) < batch_size for batch in batches) <= 1


def test_batches_pad_less_than_shuffled_ones_and_vary_by_epoch():
    rng = random.Random(0)
    lengths = [rng.randint(200, 1000) for _ in range(1000)]
    sampler = LengthGroupedBatches(lengths, 8, seed=0)
    first, second = list(sampler), list(sampler)
    shuffled = list(range(len(lengths)))
    rng.shuffle(shuffled)
    random_batches = [shuffled[i : i + 8] for i in range(0, len(shuffled), 8)]
    waste = 1 - sum(lengths) / padded(first, lengths)
    assert waste < 0.05 < 1 - sum(lengths) / padded(random_batches, lengths)
    assert first != second  # a new order each epoch
    assert list(LengthGroupedBatches(lengths, 8, seed=0)) == first  # and the same one for the same seed
    # Long and short batches are spread over the epoch, not sorted.
    widths = [max(lengths[i] for i in batch) for batch in first]
    assert widths != sorted(widths) and widths != sorted(widths, reverse=True)


# --- the effective batch: its layout over processes and accumulation steps -------------------------


@settings(max_examples=200, deadline=None)
@given(n=st.integers(0, 60), processes=st.integers(1, 8), accumulation=st.integers(1, 8))
def test_a_step_is_cut_into_equal_counts_of_runs_that_hold_each_item_once(n, processes, accumulation):
    items = list(range(n))
    shares = [micro_batches(items, processes, rank, accumulation) for rank in range(processes)]
    counts = {len(share) for share in shares}
    assert len(counts) == 1  # every process makes as many passes: collectives stay in step
    runs = [run for share in shares for run in share]
    assert all(runs) and max(map(len, runs), default=0) - min(map(len, runs), default=0) <= 1
    if n >= processes:
        assert [i for run in runs for i in run] == items  # in order, each once
        assert counts == {min(accumulation, n // processes)}
    else:
        assert runs == []  # fewer items than processes: the step is left out
    # One process accumulating makes the same runs as several processes each making fewer.
    if n >= processes * accumulation:
        assert micro_batches(items, 1, 0, processes * accumulation) == runs


def test_the_layout_of_an_effective_batch_and_the_combinations_refused():
    assert batch_layout(8, None, 1, "x").record() == {
        "effective_batch": 8,
        "micro_batch": 8,
        "processes": 1,
        "accumulation_steps": 1,
    }
    assert batch_layout(8, None, 4, "x") == BatchLayout(8, 2, 4, 1)
    assert batch_layout(8, 1, 2, "x") == BatchLayout(8, 1, 2, 4)
    assert batch_layout(32, 2, 8, "x") == BatchLayout(32, 2, 8, 2)
    with pytest.raises(ParamsError, match=r"critic a: batch_size 8 .* multiple of training.micro_batch_size 3 x 1"):
        batch_layout(8, 3, 1, "critic a")
    with pytest.raises(ParamsError, match=r"batch_size 8 .* multiple of training.micro_batch_size 2 x 8 processes"):
        batch_layout(8, 2, 8, "x")  # 16 a step would be twice the batch asked for
    with pytest.raises(ParamsError, match=r"batch_size 6 .* does not divide among 4 processes.*micro_batch_size"):
        batch_layout(6, None, 4, "x")


@given(
    total=st.integers(1, 400),
    warmup_share=st.floats(0, 0.5),
    final_lr_share=st.floats(0, 1),
    peak=st.floats(1e-7, 1.0),
)
@settings(max_examples=50, deadline=None)
def test_the_schedule_ramps_up_over_its_warmup_share_then_decays_to_its_final_share(
    total, warmup_share, final_lr_share, peak
):
    engine = training_params(warmup_share=warmup_share, final_lr_share=final_lr_share)
    rates = [lr_at(step, total, peak, engine) for step in range(total)]
    warmup = max(1, round(warmup_share * total))
    ramp, decay = rates[:warmup], rates[warmup:]
    assert ramp == sorted(ramp) and rates[min(warmup, total) - 1] == pytest.approx(peak)
    assert decay == sorted(decay, reverse=True)
    assert all(final_lr_share * peak * (1 - 1e-9) <= r <= peak * (1 + 1e-9) for r in decay)
    # The cosine reaches its floor one step past the last: the last step is the closest to it.
    if len(decay) > 1:
        assert decay[-1] == pytest.approx(
            peak
            * (final_lr_share + (1 - final_lr_share) * 0.5 * (1 + math.cos(math.pi * (len(decay) - 1) / len(decay))))
        )


def test_the_launch_takes_its_process_count_from_params_then_slurm_then_the_gpus():
    engine = training_params(accelerate_config="configs/accelerate/zero3.yaml")
    assert launch_processes(engine.model_copy(update={"processes": 3}), {"SLURM_GPUS_ON_NODE": "8"}) == 3
    assert launch_processes(engine, {"SLURM_GPUS_ON_NODE": "4"}) == 4
    with pytest.raises(ParamsError, match="SLURM_GPUS_ON_NODE='gpu:4': not a GPU count; set training.processes"):
        launch_processes(engine, {"SLURM_GPUS_ON_NODE": "gpu:4"})
    if not torch.cuda.device_count():  # this machine
        with pytest.raises(ParamsError, match="no GPU is visible and training.processes is null"):
            launch_processes(engine, {})


class Scale(Objective):
    """Learn y = 3x with one weight: an objective with nothing of a language model in it."""

    def __init__(self, xs: list[float]):
        self.items, self.evaluations = xs, 0

    def collate(self, items: list[float]) -> dict:
        return {"x": torch.tensor(items).unsqueeze(1)}

    def loss(self, model, batch: dict) -> StepResult:
        return StepResult(((model(batch["x"]) - 3 * batch["x"]) ** 2).mean(), tokens=len(batch["x"]))

    def weight(self, batch: dict) -> int:
        return len(batch["x"])

    def evaluate(self, model, accelerator) -> dict[str, float]:
        assert not model.training and not torch.is_grad_enabled()
        self.evaluations += 1
        return {"weight": round(float(model.weight), 5)}


def test_fit_needs_only_an_objective_and_the_named_settings_of_its_run(tmp_path):
    """Evaluated before training and after each epoch, `per_step` items a step, and the settings
    named: a positional TrainRun is refused."""
    torch.manual_seed(0)
    model = torch.nn.Linear(1, 1, bias=False)
    objective = Scale([0.5 * i for i in range(1, 9)])
    trainer = TrainerParams(seed=0, epochs=10, learning_rate=0.5, batch_size=4)
    run = TrainRun(trainer=trainer, engine=training_params(lora=None), log_dir=tmp_path / "live", name="scale")
    fitted = fit(model, objective, run)
    summary = fitted.summary
    assert objective.evaluations == 1 + 10 and summary["steps"] == 10 * 2 and summary["train_tokens"] == 10 * 8
    assert abs(summary["eval_weight_initial"] - 3) > 2 and abs(summary["eval_weight_final"] - 3) < 0.5
    assert (tmp_path / "live/metrics.json").exists()
    with pytest.raises(TypeError):
        TrainRun(trainer, run.engine, tmp_path, "scale")


def scale_run(log_dir: Path, epochs: int = 2) -> tuple[torch.nn.Module, Objective, TrainRun]:
    torch.manual_seed(0)
    trainer = TrainerParams(seed=0, epochs=epochs, learning_rate=0.5, batch_size=4)
    run = TrainRun(trainer=trainer, engine=training_params(lora=None), log_dir=log_dir, name="scale")
    return torch.nn.Linear(1, 1, bias=False), Scale([0.5 * i for i in range(1, 9)]), run


def test_fit_in_a_git_repository_without_dvc_leaves_it_as_it_was(tmp_path, monkeypatch):
    """A bench or a notebook in a user's repository: DVCLive must not `dvc init` it and stage `.dvc/`."""
    repo = tmp_path / "theirs"
    repo.mkdir()
    git = lambda *args: subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True)  # noqa: E731
    git("init", "-q")
    (repo / "notes.txt").write_text("mine\n")
    git("add", "notes.txt")
    git("-c", "user.name=u", "-c", "user.email=u@localhost", "commit", "-qm", "theirs")
    monkeypatch.chdir(repo)
    model, objective, run = scale_run(tmp_path / "live")  # the log outside their repository
    fit(model, objective, run)
    assert git("status", "--porcelain", "--ignored").stdout == ""
    assert not (repo / ".dvc").exists() and not (repo / ".dvcignore").exists()
    assert (tmp_path / "live/metrics.json").is_file()  # the curves still go where they were asked


@pytest.mark.parametrize("before", [(False, False), (True, False), (True, True)])
def test_fit_leaves_torchs_deterministic_setting_as_it_found_it(tmp_path, before):
    torch.use_deterministic_algorithms(before[0], warn_only=before[1])
    try:
        seen = []

        class Watched(Scale):
            def loss(self, model, batch):
                seen.append(torch.are_deterministic_algorithms_enabled())
                return super().loss(model, batch)

        model, _, run = scale_run(tmp_path / "live", epochs=1)
        fit(model, Watched([0.5 * i for i in range(1, 9)]), run)
        assert seen and all(seen)  # deterministic while training
        after = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
        assert after == before
    finally:
        torch.use_deterministic_algorithms(False)


def test_fit_trains_on_the_cpu_when_params_say_cpu(tmp_path):
    model, objective, run = scale_run(tmp_path / "live", epochs=1)
    fitted = fit(
        model,
        objective,
        TrainRun(trainer=run.trainer, engine=run.engine, log_dir=run.log_dir, name="scale", device="cpu"),
    )
    assert next(fitted.model.parameters()).device.type == "cpu"
