"""A preference method's reference pass (sweetflow/rl/policy_methods.py, `PreferenceTraining.prepare`) cut off
inside itself: the rerun reads the rows the cut-off run kept, computes only the others, and ends with what an
uninterrupted pass keeps."""

from __future__ import annotations

import polars as pl
import pytest
import torch

from sweetflow.rl.loop import SAVE_EVERY_VARIABLE
from sweetflow.rl.policy_methods import PARTIAL, REFERENCE, PreferenceTraining, Source
from sweetflow.rl.sequences import NOT_SCORED, PairData, SegmentedSequence
from tests.support.models import tiny_llama
from tests.support.params import project_params

PAD, BOS, END = 0, 1, 5
X = NOT_SCORED


class Interrupted(Exception):
    """Stands for a kill inside the pass."""


def pair_data(n_pairs: int) -> PairData:
    gen = torch.Generator().manual_seed(0)
    sequences = []
    for _ in range(2 * n_pairs):
        prompt, answer = torch.randint(6, 16, (4,), generator=gen).tolist(), torch.randint(6, 16, (3,), generator=gen)
        sequences.append(SegmentedSequence([BOS, *prompt, *answer.tolist(), END], [X] * 5 + [0] * 4))
    return PairData(sequences, [(2 * k, 2 * k + 1) for k in range(n_pairs)])


def training(model) -> PreferenceTraining:
    p = project_params().policies["mtdpo"].model_copy(update={"batch_size": 2})
    engine = project_params().training.model_copy(update={"micro_batch_size": None})
    source = Source("backend", {}, pl.DataFrame(), "rollout.parquet", model, None, PAD, 64, engine, lambda *_, **__: "")
    return PreferenceTraining(p, source, ["pairs.parquet"], pair_data(6), dropped=0)


def forward_calls(model, fail_at: int | None = None) -> list[int]:
    """Counts the model's forward passes; raises Interrupted at pass `fail_at`."""
    calls = []

    def hook(*_):
        calls.append(1)
        if len(calls) == fail_at:
            raise Interrupted

    model.register_forward_pre_hook(hook)
    return calls


def test_a_reference_pass_cut_off_inside_itself_resumes_from_its_kept_rows(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(SAVE_EVERY_VARIABLE, "0")  # keep the rows after every batch
    model = tiny_llama(seed=3)
    calls = forward_calls(model)
    whole = training(model)
    whole.prepare(tmp_path / "whole")
    uninterrupted = len(calls)

    cut = tmp_path / "cut"
    model = tiny_llama(seed=3)
    forward_calls(model, fail_at=uninterrupted // 2 + 1)
    with pytest.raises(Interrupted):
        training(model).prepare(cut)
    assert (cut / PARTIAL).is_file() and not (cut / REFERENCE).exists()

    model = tiny_llama(seed=3)
    calls = forward_calls(model)
    resumed = training(model)
    resumed.prepare(cut)
    assert "kept by an interrupted run" in capsys.readouterr().err
    assert 0 < len(calls) < uninterrupted  # only the rows the cut-off run did not keep
    assert (cut / REFERENCE).is_file() and not (cut / PARTIAL).exists()
    assert torch.equal(resumed.pairs.ref.sums, whole.pairs.ref.sums)
    assert torch.equal(resumed.pairs.ref.counts, whole.pairs.ref.counts)
