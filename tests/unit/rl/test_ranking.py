"""The critic's ranking of candidates (sweetflow/rl/ranking.py) reads what its preference loss
trained: the same log-ratio, against the same reference."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from sweetflow.rl.batching import collate_segmented
from sweetflow.rl.drift import mean_token_kl
from sweetflow.rl.logprobs import reference_segment_logps, segment_logps
from sweetflow.rl.loss import PreferenceLoss
from sweetflow.rl.ranking import REFERENCE_DIR, critic_reference, score_candidates
from sweetflow.rl.sequences import NOT_SCORED, SegmentedSequence
from tests.support.models import BOS, PAD, tiny_llama

VOCAB = 16
# Three different models: what a critic with warm-up meets. Its loss compared it with the warmed model.
BASE, WARMED, CRITIC = tiny_llama(0, VOCAB), tiny_llama(1, VOCAB), tiny_llama(2, VOCAB)


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def candidate(state: list[int], action: list[int]) -> SegmentedSequence:
    """A state (BOS, then its tokens), then the candidate action as the one scored segment."""
    return SegmentedSequence([BOS, *state, *action], [NOT_SCORED] * (1 + len(state)) + [0] * len(action))


tokens = st.lists(st.integers(2, VOCAB - 1), min_size=1, max_size=12)
candidates = st.lists(st.tuples(tokens, tokens), min_size=1, max_size=6)


@settings(max_examples=25, deadline=None)
@given(candidates, st.booleans(), st.integers(1, 4))
def test_a_candidates_score_is_the_log_ratio_its_loss_trained(drawn, length_normalize, batch_size):
    sequences = [candidate(state, action) for state, action in drawn]
    got = score_candidates(CRITIC, WARMED, sequences, batch_size, PAD, length_normalize)

    # What PreferenceLoss scores for the same sequences: the critic's sums against its reference's,
    # the reference's computed once as before training.
    loss = PreferenceLoss(beta=0.1, length_normalize=length_normalize)
    ref = reference_segment_logps(WARMED, sequences, batch_size=len(sequences), pad_id=PAD)
    with torch.no_grad():
        sums, counts = segment_logps(CRITIC, collate_segmented(sequences, PAD), ref.num_segments)
        doubled = lambda t: torch.cat([t, t])  # noqa: E731 — the loss reads chosen rows, then rejected ones
        trained = loss(doubled(sums), doubled(ref.sums), doubled(counts)).chosen_rewards / loss.beta
    torch.testing.assert_close(torch.tensor(got.score, dtype=torch.float32), trained, rtol=1e-4, atol=1e-5)

    # And not against the base model: that would add log π_warm − log π_base, which nothing trained.
    against_base = score_candidates(CRITIC, BASE, sequences, batch_size, PAD, length_normalize)
    # (Not compared within a tolerance: on one short candidate the two references can differ by less than 1e-3.)
    assert against_base.score != got.score


def test_a_rerun_reads_both_kept_passes_instead_of_running_the_models(tmp_path):
    sequences = [candidate([2, 3], [4, 5, 6]), candidate([7], [8]), candidate([9, 9], [10])]
    first = score_candidates(CRITIC, WARMED, sequences, 2, PAD, length_normalize=True, keep=tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["critic_logps.pt", "reference_logps.pt"]

    def refuse(*_):
        raise AssertionError("a kept pass ran its model again")

    hooks = [model.register_forward_pre_hook(refuse) for model in (CRITIC, WARMED)]
    try:
        again = score_candidates(CRITIC, WARMED, sequences, 2, PAD, length_normalize=True, keep=tmp_path)
    finally:
        for hook in hooks:
            hook.remove()
    assert again == first


def test_the_means_are_the_critics_and_the_references_per_token_log_probs():
    sequences = [candidate([2, 3], [4, 5, 6]), candidate([7], [8])]
    got = score_candidates(CRITIC, WARMED, sequences, 2, PAD, length_normalize=True)
    for model, means in ((CRITIC, got.critic_mean), (WARMED, got.reference_mean)):
        ref = reference_segment_logps(model, sequences, 2, PAD)
        assert means == pytest.approx((ref.sums[:, 0] / ref.counts[:, 0]).tolist())
    assert got.score == pytest.approx([c - r for c, r in zip(got.critic_mean, got.reference_mean)], abs=1e-6)


def test_the_reference_is_the_kept_warmed_model_else_the_base(tmp_path):
    critic, base = tmp_path / "critic", tmp_path / "base"
    critic.mkdir()
    assert critic_reference(critic, base) == base  # no warm-up: the critic started from the base model
    (critic / REFERENCE_DIR).mkdir()
    assert critic_reference(critic, base) == base  # an empty directory is no checkpoint
    (critic / REFERENCE_DIR / "config.json").write_text("{}")
    assert critic_reference(critic, base) == critic / REFERENCE_DIR


def test_drift_is_zero_against_itself_and_positive_against_another_model():
    sequences = [candidate([2, 3, 4], [5, 6]), candidate([7, 8], [9, 10, 11])]
    assert mean_token_kl(CRITIC, CRITIC, sequences, 2, PAD) == pytest.approx(0.0, abs=1e-6)
    assert mean_token_kl(CRITIC, BASE, sequences, 1, PAD) > 0.0
    # A batch size changes nothing but the float kernels' order over padded rows (a relative 1e-5 seen on
    # one CPU); a segment limit that leaves no token is an error, not a zero.
    assert mean_token_kl(CRITIC, BASE, sequences, 1, PAD) == pytest.approx(
        mean_token_kl(CRITIC, BASE, sequences, 2, PAD), rel=1e-4
    )
    with pytest.raises(ValueError, match="no scored token"):
        mean_token_kl(CRITIC, BASE, sequences, 2, PAD, segments=0)


def test_drift_by_hand_on_one_position():
    """One scored token: the KL of the two next-token distributions at the position before it."""
    sequences = [candidate([2, 3], [4])]
    batch = collate_segmented(sequences, PAD)
    with torch.no_grad():
        p = CRITIC(input_ids=batch["input_ids"]).logits[0, -2].log_softmax(-1)
        q = BASE(input_ids=batch["input_ids"]).logits[0, -2].log_softmax(-1)
    expected = float((p.exp() * (p - q)).sum())
    assert mean_token_kl(CRITIC, BASE, sequences, 1, PAD) == pytest.approx(expected, rel=1e-5)


def test_scoring_shows_its_progress_by_sequence(capsys):
    """Ranking thousands of candidates takes many minutes on a CPU: both passes show a bar."""
    sequences = [candidate([3, 4, 5], [6 + i % 4]) for i in range(5)]
    score_candidates(CRITIC, WARMED, sequences, 2, PAD, True)
    shown = capsys.readouterr().err
    assert "critic log-probs" in shown and "reference log-probs" in shown and "5/5" in shown


class _Refuses(torch.nn.Module):
    """A model whose pass must not run: the kept one is read instead."""

    def forward(self, *args, **kwargs):
        raise AssertionError("the reference's pass ran again")


def test_the_references_pass_kept_apart_is_read_by_a_second_critic_of_the_same_reference(tmp_path):
    """Two critics of one reference (a tuning's learning rates): the second reads the reference's pass the first
    kept in `keep_reference`, and scores as if it had computed it; its own pass is kept in its own directory."""
    sequences = [candidate([3, 4, 5], [6, 7]), candidate([8], [9, 10, 11]), candidate([2, 2], [5])]
    shared = tmp_path / "reference-pass"
    first = score_candidates(CRITIC, WARMED, sequences, 2, PAD, True, keep=tmp_path / "a", keep_reference=shared)
    assert (shared / "reference_logps.pt").is_file() and not (tmp_path / "a" / "reference_logps.pt").exists()
    second = score_candidates(BASE, _Refuses(), sequences, 2, PAD, True, keep=tmp_path / "b", keep_reference=shared)
    alone = score_candidates(BASE, WARMED, sequences, 2, PAD, True)
    assert second.reference_mean == first.reference_mean
    torch.testing.assert_close(torch.tensor(second.score), torch.tensor(alone.score))
