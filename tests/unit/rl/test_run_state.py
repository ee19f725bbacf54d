"""A training run killed mid-way resumes from its last saved state and ends as if never stopped."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from sweetflow.core.params import TrainerParams
from sweetflow.rl.loop import Objective, StepResult, TrainRun, fit
from tests.support.interrupted import saved_step
from tests.support.params import training_params

ROOT = Path(__file__).resolve().parents[3]


class NoisyRegression(Objective):
    """Learn a linear map through dropout: every step draws from torch's global generator, so a resumed run
    that did not restore it would diverge."""

    def __init__(self):
        generator = torch.Generator().manual_seed(1)
        self.xs = torch.randn(96, 8, generator=generator)
        self.items = list(range(96))

    def collate(self, items: list[int]) -> dict:
        return {"x": self.xs[items]}

    def loss(self, model, batch: dict) -> StepResult:
        x = torch.nn.functional.dropout(batch["x"], 0.3, training=True)
        return StepResult(((model(x) - batch["x"].flip(1)) ** 2).mean(), tokens=len(batch["x"]))

    def weight(self, batch: dict) -> int:
        return len(batch["x"])

    def evaluate(self, model, accelerator) -> dict[str, float]:
        return {"loss": round(float(((model(self.xs) - self.xs.flip(1)) ** 2).mean()), 6)}


def train(work: str, resume: bool, save_every_s: float = 0.0) -> None:
    """One run: 3 epochs of 24 steps, its state saved every `save_every_s` seconds (after every step by
    default) when `resume`; writes what it learnt."""
    work_dir = Path(work)
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 8)
    run = TrainRun(
        trainer=TrainerParams(seed=3, epochs=3, learning_rate=0.05, batch_size=4),
        engine=training_params(lora=None),
        log_dir=work_dir / "live",
        name="noisy",
        resume_dir=work_dir / "state" if resume else None,
        save_every_s=save_every_s,
    )
    fitted = fit(model, NoisyRegression(), run)
    torch.save(fitted.model.state_dict(), work_dir / "weights.pt")
    (work_dir / "summary.json").write_text(json.dumps(fitted.summary))


def start(work: Path, resume: bool) -> subprocess.Popen:
    code = f"from tests.unit.rl.test_run_state import train; train({str(work)!r}, {resume})"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)


def curve(live: Path, name: str) -> list[tuple[str, str]]:
    """A DVCLive curve's (step, value) rows, without their timestamps."""
    with (live / "plots/metrics" / f"{name}.tsv").open() as rows:
        return [(row["step"], row[name.split("/")[-1]]) for row in csv.DictReader(rows, delimiter="\t")]


@pytest.mark.parametrize("kill_after", [1, 30])
def test_a_run_killed_mid_way_resumes_and_ends_as_the_uninterrupted_run(tmp_path, kill_after):
    """Killed (SIGKILL, a real process) once its state holds step `kill_after` or later, in the first or the
    second epoch; started again, it trains only what is left and gives the same weights, summary and curves
    as a run never stopped."""
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    whole.mkdir(), cut.mkdir()
    assert start(whole, resume=False).wait(timeout=300) == 0

    first = start(cut, resume=True)
    deadline = time.monotonic() + 300
    while saved_step(cut / "state") < kill_after and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    first.send_signal(signal.SIGKILL)
    first.wait()
    at = saved_step(cut / "state")
    assert first.returncode == -signal.SIGKILL and kill_after <= at < 72, "killed before its end"
    assert not (cut / "weights.pt").exists()

    second = start(cut, resume=True)
    _, err = second.communicate(timeout=300)
    assert second.returncode == 0, err
    resumed_at = int(err.split("resuming at step ")[1].split()[0])
    assert resumed_at >= at
    assert not (cut / "state").exists()  # nothing left to resume once finished

    expected, got = torch.load(whole / "weights.pt"), torch.load(cut / "weights.pt")
    assert all(torch.equal(expected[k], got[k]) for k in expected)
    assert json.loads((cut / "summary.json").read_text()) == json.loads((whole / "summary.json").read_text())
    for name in ("train/loss", "train/lr", "eval/loss"):
        assert curve(cut / "live", name) == curve(whole / "live", name)


def test_a_run_without_a_resume_dir_keeps_no_state(tmp_path):
    train(str(tmp_path), resume=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["live", "summary.json", "weights.pt"]


def test_a_finished_run_leaves_no_save_that_a_kill_cut_short(tmp_path):
    """A kill while the state was being saved leaves the half-written copy beside it (made by hand here: a
    kill cannot be aimed at that moment); a rerun that finishes before its next save removes it too."""
    cut_short = tmp_path / ".state.saving"
    (cut_short / "accelerate").mkdir(parents=True)
    train(str(tmp_path), resume=True, save_every_s=3600.0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["live", "summary.json", "weights.pt"]
