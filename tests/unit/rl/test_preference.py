"""The preference loss (sweetflow/rl/loss.py, logprobs.py, batching.py, preference.py) against
hand-computed values, its properties, TRL's DPO
loss on the same model and batch, a tiny critic that learns to rank a better turn above a worse one,
and training that reproduces bit for bit."""

from __future__ import annotations

import copy
import math

import pytest
import torch
from accelerate.state import AcceleratorState
from hypothesis import example, given, settings
from hypothesis import strategies as st
from transformers import LlamaForCausalLM

from sweetflow.core.artifacts import SAVE_EVERY_VARIABLE
from sweetflow.core.params import TrainerParams
from sweetflow.models.tiny import tiny_config
from sweetflow.rl.batching import collate_segmented, collate_shared_prefix
from sweetflow.rl.logprobs import (
    SegmentLogps,
    kept_segment_logps,
    predicting,
    reference_segment_logps,
    segment_logp_sums,
    segment_logps,
    token_logprobs,
)
from sweetflow.rl.loop import TrainRun
from sweetflow.rl.loss import PreferenceLoss, bradley_terry_loss, nll_loss, segment_scores
from sweetflow.rl.preference import ScoredPairs, train_preference
from sweetflow.rl.sequences import NOT_SCORED, PairData, SegmentedSequence, group_pairs
from tests.support.models import tiny_llama
from tests.support.params import training_params

LOG = math.log
X = NOT_SCORED


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """One torch thread: these tensors are too small to share, and tests run two at a time (pytest -n 2)
    on a 2-core machine, where two threads per test contend (measured: 0.2 s against 2–6 s)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


# --- token log-probs --------------------------------------------------------------------------------


def test_token_logprobs_by_hand_and_masked_tokens_get_zero():
    # Vocabulary of 3. Logits at position 0 are uniform: token 1 at position 1 has p = 1/3.
    # Logits at position 1 are (0, ln 2, ln 5): token 2 at position 2 has p = 5 / (1 + 2 + 5) = 5/8.
    ids = torch.tensor([[0, 1, 2]])
    logits = torch.tensor([[[0.0, 0.0, 0.0], [0.0, LOG(2), LOG(5)], [9.0, 9.0, 9.0]]])
    cases = (([False, True, True], [0.0, LOG(1 / 3), LOG(5 / 8)]), ([False, False, True], [0.0, 0.0, LOG(5 / 8)]))
    for scored, expected in cases:
        scored = torch.tensor([scored])
        torch.testing.assert_close(token_logprobs(logits[predicting(scored)], ids, scored), torch.tensor([expected]))


def test_only_positions_before_scored_tokens_need_logits():
    scored = torch.tensor([[False, True, False, True], [False, False, False, False]])
    assert predicting(scored).tolist() == [[True, False, True, False], [False, False, False, False]]
    with pytest.raises(ValueError, match="2 rows of logits for 1 scored tokens"):
        token_logprobs(torch.zeros(2, 5), torch.zeros(1, 3, dtype=torch.long), torch.tensor([[False, True, False]]))


def test_position_zero_cannot_be_scored():
    with pytest.raises(ValueError, match="position 0"):
        predicting(torch.tensor([[True, True]]))


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10**6), st.integers(1, 7))
def test_token_logprobs_equal_full_log_softmax_for_any_chunking(seed, chunk_rows):
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(3, 6, 11, generator=g) * 4
    ids = torch.randint(0, 11, (3, 6), generator=g)
    scored = torch.rand(3, 6, generator=g) < 0.6
    scored[:, 0] = False
    naive = logits[:, :-1].log_softmax(-1).gather(-1, ids[:, 1:, None]).squeeze(-1) * scored[:, 1:]
    got = token_logprobs(logits[predicting(scored)], ids, scored, chunk_rows=chunk_rows)
    torch.testing.assert_close(got[:, 1:], naive)
    assert (got[:, 0] == 0).all()


# --- segments ---------------------------------------------------------------------------------------


# One trajectory: a prompt token, turn 0 (2 tokens), a human token, turn 1 (3 tokens).
TOKEN_LOGPS = torch.tensor([[0.0, -1.0, -2.0, -9.0, -3.0, -4.0, -5.0]])
REF_LOGPS = torch.tensor([[0.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0]])
SEGMENTS = torch.tensor([[X, 0, 0, X, 1, 1, 1]])


def test_segment_sums_leave_out_unscored_tokens():
    sums, counts = segment_logp_sums(TOKEN_LOGPS, SEGMENTS, num_segments=3)
    # turn 0: −1 − 2 = −3 over 2 tokens; turn 1: −3 − 4 − 5 = −12 over 3; the −9 (human token) is in
    # neither; segment 2 does not exist in this trajectory: 0 over 0.
    assert sums.tolist() == [[-3.0, -12.0, 0.0]]
    assert counts.tolist() == [[2, 3, 0]]


def test_length_normalisation_divides_each_turn_by_its_own_length_and_turns_sum_per_trajectory():
    sums, counts = segment_logp_sums(TOKEN_LOGPS, SEGMENTS, 2)
    ref_sums, _ = segment_logp_sums(REF_LOGPS, SEGMENTS, 2)  # turn 0: −2; turn 1: −3
    normalised = segment_scores(sums, ref_sums, counts, length_normalize=True)
    # A_0 = (−3 − (−2)) / 2 = −0.5 ; A_1 = (−12 − (−3)) / 3 = −3
    torch.testing.assert_close(normalised, torch.tensor([[-0.5, -3.0]]))
    raw = segment_scores(sums, ref_sums, counts, length_normalize=False)
    torch.testing.assert_close(raw, torch.tensor([[-1.0, -9.0]]))
    # The trajectory's score is the sum over its turns: −3.5 normalised, −10 raw.
    loss = PreferenceLoss(beta=1.0, length_normalize=True)
    zeros = torch.zeros_like(sums)  # a rejected trajectory scoring 0
    out = loss(torch.cat([sums, zeros]), torch.cat([ref_sums, zeros]), torch.cat([counts, counts]))
    assert out.chosen_rewards.tolist() == [-3.5]


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.floats(-20, 0), min_size=1, max_size=6),
    st.lists(st.floats(-20, 0), min_size=1, max_size=6),
    st.integers(2, 4),
)
def test_length_normalised_score_is_unchanged_when_a_turns_tokens_are_repeated(policy, ref, times):
    n = min(len(policy), len(ref))
    policy, ref = policy[:n], ref[:n]

    def score(copies: int, normalise: bool) -> float:
        p = torch.tensor([[0.0] + policy * copies], dtype=torch.float64)
        r = torch.tensor([[0.0] + ref * copies], dtype=torch.float64)
        seg = torch.tensor([[X] + [0] * (n * copies)])
        (ps, counts), (rs, _) = segment_logp_sums(p, seg, 1), segment_logp_sums(r, seg, 1)
        return segment_scores(ps, rs, counts, normalise).item()

    assert score(times, True) == pytest.approx(score(1, True), abs=1e-9)
    assert score(times, False) == pytest.approx(times * score(1, False), abs=1e-9)


# --- the loss ---------------------------------------------------------------------------------------


def pair_batch(chosen_ratio: float, rejected_ratio: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One pair, one segment each, 1 token each: policy sums = the log-ratios, reference sums = 0."""
    policy = torch.tensor([[chosen_ratio], [rejected_ratio]], requires_grad=True)
    return policy, torch.zeros(2, 1), torch.ones(2, 1, dtype=torch.long)


def test_bradley_terry_by_hand_with_beta_scaling():
    # s⁺ = 2, s⁻ = 0, β = 0.5: loss = −log σ(0.5 · 2) = log(1 + e^−1) = 0.3132616875…
    out = PreferenceLoss(beta=0.5, length_normalize=False)(*pair_batch(2.0, 0.0))
    assert out.loss.item() == pytest.approx(math.log(1 + math.exp(-1)))
    m = out.metrics()
    assert (m["rewards/chosen"], m["rewards/rejected"]) == pytest.approx((1.0, 0.0))  # β·s
    assert (m["rewards/margins"], m["rewards/accuracies"]) == pytest.approx((1.0, 1.0))
    # β = 2 on the same scores: −log σ(4) = log(1 + e^−4) = 0.0181499…; rewards scale with β.
    out = PreferenceLoss(beta=2.0, length_normalize=False)(*pair_batch(2.0, 0.0))
    assert out.loss.item() == pytest.approx(math.log(1 + math.exp(-4)))
    assert out.metrics()["rewards/chosen"] == pytest.approx(4.0)


def test_equal_scores_give_log_2_and_no_accuracy():
    out = PreferenceLoss(beta=0.1, length_normalize=True)(*pair_batch(-1.5, -1.5))
    assert out.loss.item() == pytest.approx(math.log(2))  # −log σ(0) = log 2
    assert out.metrics()["rewards/accuracies"] == 0.0  # a tie is not a correct ranking


def test_nll_term_is_the_mean_over_chosen_response_tokens():
    # Chosen row: turn sums −3 (2 tokens) and −12 (3 tokens): NLL = 15 / 5 = 3. The rejected row's
    # tokens (sum −100) do not count.
    policy = torch.tensor([[-3.0, -12.0], [-100.0, 0.0]])
    counts = torch.tensor([[2, 3], [4, 0]])
    assert nll_loss(policy[:1], counts[:1]).item() == 3.0
    ref = policy.clone()  # log-ratios 0: the preference term is log 2
    out = PreferenceLoss(beta=0.1, length_normalize=True, nll_coef=0.01)(policy, ref, counts)
    assert out.nll.item() == 3.0
    assert out.loss.item() == pytest.approx(math.log(2) + 0.01 * 3.0)


def test_nll_per_sequence_mean_weighs_every_chosen_sequence_equally():
    # Chosen rows: −4 over 1 token (mean 4) and −6 over 6 tokens (mean 1). Token mean 10 / 7;
    # per-sequence mean (4 + 1) / 2.
    sums, counts = torch.tensor([[-4.0], [-6.0]]), torch.tensor([[1], [6]])
    assert nll_loss(sums, counts, "token").item() == pytest.approx(10 / 7)
    assert nll_loss(sums, counts, "sequence").item() == pytest.approx(2.5)


def test_dialogue_span_leaves_the_context_segment_out_of_the_scores_and_in_the_nll():
    # Columns: the response, then the context. Chosen: response −1 (1 token), context −10 (4 tokens);
    # rejected: response −2 (1 token), context −30 (4 tokens). Reference 0 everywhere, β = 1.
    policy = torch.tensor([[-1.0, -10.0], [-2.0, -30.0]])
    counts = torch.tensor([[1, 4], [1, 4]])
    out = PreferenceLoss(1.0, False, nll_coef=0.5, nll_span="dialogue", nll_mean="sequence")(
        policy, torch.zeros_like(policy), counts
    )
    assert out.preference_loss.item() == pytest.approx(-math.log(1 / (1 + math.exp(-1.0))))  # s⁺ − s⁻ = 1
    assert out.nll.item() == pytest.approx(11 / 5)
    assert out.loss.item() == pytest.approx(out.preference_loss.item() + 0.5 * 11 / 5)
    response_only = PreferenceLoss(1.0, False, nll_coef=0.5)(policy, torch.zeros_like(policy), counts)
    assert response_only.preference_loss.item() != pytest.approx(out.preference_loss.item())  # the context counted
    with pytest.raises(ValueError, match="context segment"):
        PreferenceLoss(1.0, False, nll_span="dialogue")(policy[:, :1], torch.zeros(2, 1), counts[:, :1])


def test_the_context_segment_holds_every_unscored_token_after_the_first():
    data = PairData(
        [SegmentedSequence([1, 2, 3, 4, 5], [X, X, 0, X, 1]), SegmentedSequence([1, 2, 3], [X, 0, 0])], [(0, 1)], [[0]]
    )
    context = data.with_context_segment()
    assert [s.segment_ids for s in context.sequences] == [[X, 2, 0, 2, 1], [X, 0, 0]]
    assert [s.input_ids for s in context.sequences] == [s.input_ids for s in data.sequences]
    assert (context.pairs, context.groups) == (data.pairs, data.groups)


def test_the_dialogue_nll_trains_the_prompt_tokens_too():
    # The chosen row's prompt token (position 1) gets a gradient from the dialogue NLL only.
    torch.manual_seed(0)
    ids = torch.tensor([[1, 2, 3, 4], [1, 2, 0, 1]])
    base = PairData([SegmentedSequence(row.tolist(), [X, X, 0, 0]) for row in ids], [(0, 1)])
    for span, k, prompt_grad in (("response", 1, False), ("dialogue", 2, True)):
        data = base.with_context_segment() if span == "dialogue" else base
        segments = torch.tensor([s.segment_ids for s in data.sequences])
        logits = torch.randn(2, 4, 5, requires_grad=True)
        scored = segments >= 0
        sums, counts = segment_logp_sums(token_logprobs(logits[predicting(scored)], ids, scored), segments, k)
        PreferenceLoss(0.1, False, nll_coef=1.0, nll_span=span)(sums, sums.detach(), counts).loss.backward()
        assert bool(logits.grad[0, 0].abs().sum() > 0) is prompt_grad  # logits at 0 predict prompt token 1
        assert (logits.grad[1, 0] == 0).all()  # the rejected side's prompt is never in the NLL


def test_gradient_descent_raises_the_chosen_log_probs_and_lowers_the_rejected_ones():
    # Two sequences (chosen, rejected) of 4 tokens over a vocabulary of 5; tokens 2 and 3 are the
    # response (one segment), tokens 0 and 1 the prompt.
    torch.manual_seed(0)
    logits = torch.randn(2, 4, 5, requires_grad=True)
    ids = torch.tensor([[1, 2, 3, 4], [1, 2, 0, 1]])
    segments = torch.tensor([[X, X, 0, 0], [X, X, 0, 0]])
    loss_fn = PreferenceLoss(beta=0.1, length_normalize=True, nll_coef=0.01)

    def logps(lg: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return segment_logp_sums(token_logprobs(lg[predicting(segments >= 0)], ids, segments >= 0), segments, 1)

    sums, counts = logps(logits)
    sums.retain_grad()
    loss_fn(sums, sums.detach() + 0.3, counts).loss.backward()
    # d loss / d (chosen log-prob) < 0 and d loss / d (rejected log-prob) > 0 …
    assert sums.grad[0, 0] < 0 < sums.grad[1, 0]
    # … and on the logits: the label logit of every chosen response token has a negative gradient
    # (descent raises it), of every rejected one a positive gradient; prompt positions get none.
    for t in (2, 3):
        assert logits.grad[0, t - 1, ids[0, t]] < 0 < logits.grad[1, t - 1, ids[1, t]]
    assert (logits.grad[:, 0] == 0).all()
    # One step of gradient descent moves the log-probs the right way.
    with torch.no_grad():
        stepped, _ = logps(logits - 1.0 * logits.grad)
    assert stepped[0, 0] > sums[0, 0] and stepped[1, 0] < sums[1, 0]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.floats(-30, 30), st.floats(-30, 30)), min_size=1, max_size=8),
    st.floats(0.01, 5),
)
@example([(30.0, 29.999999999999996)], 0.03)  # scores that differ, rewards that tie (hypothesis found it)
def test_swapping_chosen_and_rejected(scores, beta):
    chosen = torch.tensor([c for c, _ in scores], dtype=torch.float64)
    rejected = torch.tensor([r for _, r in scores], dtype=torch.float64)
    x = beta * (chosen - rejected)
    forward, swapped = bradley_terry_loss(chosen, rejected, beta), bradley_terry_loss(rejected, chosen, beta)
    # loss = softplus(−x), swapped = softplus(x), and softplus(x) − softplus(−x) = x
    torch.testing.assert_close(forward, torch.nn.functional.softplus(-x))
    torch.testing.assert_close(swapped - forward, x)
    ones = torch.ones(len(scores), 1, dtype=torch.long)
    sums = torch.cat([chosen, rejected])[:, None]
    out = PreferenceLoss(beta, length_normalize=True)(sums, torch.zeros_like(sums), torch.cat([ones, ones]))
    accuracy = out.metrics()["rewards/accuracies"]
    assert 0.0 <= accuracy <= 1.0
    # The share of pairs whose rewards β·s⁺ > β·s⁻, as TRL counts it: two scores 1 ulp apart (30.0 and
    # 29.999999999999996 at β = 0.03) can round to one reward, a tie, which counts as wrong.
    assert accuracy == pytest.approx((beta * chosen > beta * rejected).double().mean().item())


def test_batch_must_hold_chosen_then_rejected_rows():
    with pytest.raises(ValueError, match="odd"):
        PreferenceLoss(0.1, True)(torch.zeros(3, 1), torch.zeros(3, 1), torch.ones(3, 1, dtype=torch.long))


# --- with a model: the reference cache, TRL, a critic -----------------------------------------------

PAD, BOS, CONTEXT, HUMAN, AGENT, END = 0, 1, 2, 3, 4, 5
GOOD, BAD, NEUTRAL = [6, 7], [8, 9, 9], [10, 11]  # the turns' contents; the bad one is longer
WORDS = [12, 13, 14, 15]  # context and human-reply tokens


def trajectory(context: int, turns: list[tuple[int, list[int]]]) -> SegmentedSequence:
    """BOS, the critic's hidden-information prefix, then per turn: HUMAN word AGENT content END.
    Each turn's content and END are its segment (what a chat template's assistant mask marks)."""
    ids, segments = [BOS, CONTEXT, context], [X, X, X]
    for k, (word, content) in enumerate(turns):
        ids += [HUMAN, word, AGENT] + content + [END]
        segments += [X, X, X] + [k] * (len(content) + 1)
    return SegmentedSequence(ids, segments)


def test_reference_cache_rows_match_the_live_computation_and_start_at_log_2():
    ref = tiny_llama()
    sequences = [
        trajectory(12, [(13, GOOD), (14, NEUTRAL)]),
        trajectory(15, [(12, BAD)]),
        trajectory(13, [(14, NEUTRAL), (15, BAD)]),
    ]
    cache = reference_segment_logps(ref, sequences, batch_size=2, pad_id=PAD)
    assert cache.num_segments == 2 and cache.counts.tolist() == [[3, 3], [4, 0], [3, 4]]
    alone = reference_segment_logps(ref, sequences[1:2], batch_size=1, pad_id=PAD)
    torch.testing.assert_close(cache.sums[1, :1], alone.sums[0])  # padding and batching change nothing
    policy = copy.deepcopy(ref)
    rows = [0, 1]  # chosen = sequence 0, rejected = sequence 1
    sums, counts = segment_logps(policy, collate_segmented([sequences[i] for i in rows], PAD), cache.num_segments)
    out = PreferenceLoss(beta=0.1, length_normalize=True)(sums, cache.sums[rows], counts)
    assert out.loss.item() == pytest.approx(math.log(2), abs=1e-6)  # policy = reference: every log-ratio is 0


@st.composite
def sharing_sequences(draw) -> list[SegmentedSequence]:
    """Sequences drawn from a few prefixes (a state, a prompt), each followed by its own responses."""
    token = st.integers(6, 15)
    prefixes = draw(st.lists(st.lists(token, min_size=0, max_size=6), min_size=1, max_size=3))
    sequences = []
    for _ in range(draw(st.integers(1, 6))):
        prefix = [BOS] + prefixes[draw(st.integers(0, len(prefixes) - 1))]
        ids, segments = list(prefix), [X] * len(prefix)
        for k in range(draw(st.integers(1, 3))):
            content = draw(st.lists(token, min_size=1, max_size=4))
            ids += content + [END] + draw(st.lists(token, min_size=0, max_size=3))
            segments += [k] * (len(content) + 1) + [X] * (len(ids) - len(segments) - len(content) - 1)
        sequences.append(SegmentedSequence(ids, segments))
    return sequences


@settings(max_examples=25, deadline=None)
@given(sharing_sequences())
def test_shared_prefix_batches_give_the_same_sums_and_gradients_as_whole_rows(sequences):
    model = tiny_llama(seed=7)
    whole = segment_logps(model, collate_segmented(sequences, PAD), 3)
    shared_batch = collate_shared_prefix(sequences, PAD)
    assert len(shared_batch["prefix_ids"]) == len({tuple(s.input_ids[: s.segment_ids.index(0)]) for s in sequences})
    shared = segment_logps(model, shared_batch, 3)
    torch.testing.assert_close(shared[0], whole[0], atol=1e-5, rtol=1e-5)
    assert torch.equal(shared[1], whole[1])
    grads = []
    for sums in (whole[0], shared[0]):
        model.zero_grad()
        (sums * torch.arange(1, 4)).sum().backward(retain_graph=True)  # weight segments differently
        grads.append(torch.cat([q.grad.flatten() for q in model.parameters()]))
    torch.testing.assert_close(grads[1], grads[0], atol=1e-5, rtol=1e-4)


class Interrupted(Exception):
    """Stands for a kill: the pass stops after a keep, so what it kept is all a rerun has."""


@settings(max_examples=25, deadline=None)
@given(sharing_sequences(), st.integers(1, 3), st.data())
def test_a_reference_pass_cut_off_resumes_after_its_kept_rows_and_ends_as_an_uninterrupted_one(
    sequences, batch_size, data
):
    model = tiny_llama(seed=5)
    whole = reference_segment_logps(model, sequences, batch_size, PAD)
    batches = math.ceil(len(sequences) / batch_size)
    cut_after = data.draw(st.integers(1, batches), label="batches kept before the cut")
    kept = []

    def keep_then_cut(rows):
        kept.append(rows)
        if len(kept) == cut_after:
            raise Interrupted

    with pytest.raises(Interrupted):
        reference_segment_logps(model, sequences, batch_size, PAD, keep=keep_then_cut)
    assert len(kept[-1].sums) == min(cut_after * batch_size, len(sequences))
    rerun = []
    resumed = reference_segment_logps(model, sequences, batch_size, PAD, done=kept[-1], keep=rerun.append)
    assert len(rerun) == batches - cut_after  # only the batches after the kept rows run again
    assert torch.equal(resumed.sums, whole.sums) and torch.equal(resumed.counts, whole.counts)


def test_a_reference_pass_refuses_kept_rows_that_are_not_a_start_of_it():
    sequences = [trajectory(12, [(13, GOOD)]), trajectory(15, [(12, BAD)]), trajectory(13, [(14, NEUTRAL)])]
    model = tiny_llama()
    whole = reference_segment_logps(model, sequences, batch_size=2, pad_id=PAD)
    one_row = SegmentLogps(whole.sums[:1], whole.counts[:1])  # not a whole batch of 2
    with pytest.raises(ValueError, match="1 kept rows of 1 segments: not a start of this pass"):
        reference_segment_logps(model, sequences, batch_size=2, pad_id=PAD, done=one_row)


def counting_forwards(model, fail_at: int | None = None) -> list[int]:
    """Counts `model`'s forward passes from now on; raises Interrupted at pass `fail_at`."""
    calls = []

    def hook(*_):
        calls.append(1)
        if len(calls) == fail_at:
            raise Interrupted

    model.register_forward_pre_hook(hook)
    return calls


def test_a_kept_pass_cut_off_inside_itself_resumes_from_its_rows_and_is_read_back_whole(tmp_path, monkeypatch):
    monkeypatch.setenv(SAVE_EVERY_VARIABLE, "0")  # keep the rows after every batch
    sequences = [trajectory(12 + k % 4, [(13, GOOD if k % 2 else BAD), (14, NEUTRAL)]) for k in range(9)]
    model = tiny_llama(seed=4)
    calls = counting_forwards(model)
    whole = kept_segment_logps(model, sequences, 2, PAD, tmp_path / "whole.pt", desc="reference log-probs")
    uninterrupted = len(calls)

    path = tmp_path / "cut.pt"
    model = tiny_llama(seed=4)
    counting_forwards(model, fail_at=uninterrupted // 2 + 1)
    with pytest.raises(Interrupted):
        kept_segment_logps(model, sequences, 2, PAD, path, desc="reference log-probs")
    partial = path.with_name("cut.pt.partial")
    assert partial.is_file() and not path.exists()

    model = tiny_llama(seed=4)
    calls = counting_forwards(model)
    resumed = kept_segment_logps(model, sequences, 2, PAD, path, desc="reference log-probs")
    assert 0 < len(calls) < uninterrupted  # only the rows the cut-off run did not keep
    assert path.is_file() and not partial.exists()
    assert torch.equal(resumed.sums, whole.sums) and torch.equal(resumed.counts, whole.counts)

    calls = counting_forwards(model)
    again = kept_segment_logps(model, sequences, 2, PAD, path, desc="reference log-probs")
    assert not calls and torch.equal(again.sums, whole.sums)  # read back, nothing computed


def test_shared_prefix_batches_refuse_a_sequence_with_nothing_scored():
    with pytest.raises(ValueError, match="no scored token"):
        collate_shared_prefix([SegmentedSequence([BOS, 6, 7], [X, X, X])], PAD)


def test_critic_trained_on_trajectory_pairs_ranks_a_better_turn_above_a_worse_one():
    """Chosen trajectories hold a GOOD turn and a NEUTRAL one, rejected ones a BAD turn and the same
    NEUTRAL one, in random order and contexts: only the trajectory-level preference is given, and the
    critic must put the credit on the turn that differs."""
    gen = torch.Generator().manual_seed(1)

    def pick(options: list[int]) -> int:
        return options[torch.randint(len(options), (1,), generator=gen).item()]

    def pair() -> tuple[SegmentedSequence, SegmentedSequence]:
        context, words, good_first = pick(WORDS[:3]), [pick(WORDS) for _ in range(2)], pick([0, 1])

        def traj(content):
            order = [content, NEUTRAL] if good_first else [NEUTRAL, content]
            return trajectory(context, list(zip(words, order)))

        return traj(GOOD), traj(BAD)

    pairs = [pair() for _ in range(32)]
    sequences = [c for c, _ in pairs] + [r for _, r in pairs]
    ref_model = tiny_llama(seed=3)
    ref = reference_segment_logps(ref_model, sequences, batch_size=16, pad_id=PAD)
    critic = copy.deepcopy(ref_model)
    loss_fn = PreferenceLoss(beta=0.1, length_normalize=True)
    optimizer = torch.optim.AdamW(critic.parameters(), lr=5e-3)
    for _ in range(20):
        idx = torch.randperm(len(pairs), generator=gen)[:8].tolist()
        rows = idx + [len(pairs) + i for i in idx]
        sums, counts = segment_logps(critic, collate_segmented([sequences[i] for i in rows], PAD), ref.num_segments)
        out = loss_fn(sums, ref.sums[rows], counts)
        optimizer.zero_grad()
        out.loss.backward()
        optimizer.step()
    assert out.metrics()["rewards/accuracies"] == 1.0

    # Held out: a context never used in training (WORDS[3]); each turn scored alone.
    def advantage(model, content: list[int]) -> float:
        seq = trajectory(WORDS[3], [(WORDS[0], content)])
        batch = collate_segmented([seq], PAD)
        with torch.no_grad():
            sums, counts = segment_logps(model, batch, 1)
            ref_sums, _ = segment_logps(ref_model, batch, 1)
        return segment_scores(sums, ref_sums, counts, length_normalize=True).item()

    assert advantage(ref_model, GOOD) == advantage(ref_model, BAD) == 0.0  # before training (critic = ref): no ranking
    assert advantage(critic, GOOD) > advantage(critic, BAD) + 1.0  # measured: about 2.3 against −4.7


def test_dpo_loss_equals_trls_sigmoid_loss_with_its_sft_term_on_the_same_model_and_batch(tmp_path):
    """TRL 1.x has no standalone `dpo_loss`: its sigmoid loss (−logσ(β·Δ)) and `sft` term (token-mean
    NLL of the chosen completions) live inside `DPOTrainer._compute_loss`, so a real trainer computes
    them here, on its own tokenisation and collation of the batch."""
    pytest.importorskip("trl", reason="trl is not installed: `pip install trl` to compare with TRL's DPO loss")
    from datasets import Dataset
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    from trl import DPOConfig, DPOTrainer

    words = ["<pad>", "<eos>"] + list("abcdefghijkl")
    backend = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<pad>"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, pad_token="<pad>", eos_token="<eos>")
    ref = tiny_llama(seed=5, vocab=len(words))
    policy = copy.deepcopy(ref)
    with torch.no_grad():  # a policy that has moved away from the reference
        for p in policy.parameters():
            p.add_(0.3 * torch.randn_like(p))
    data = Dataset.from_dict({"prompt": ["a b c", "d e"], "chosen": [" f g", " h"], "rejected": [" i", " j k l"]})
    beta, nll_coef = 0.1, 0.01
    args = DPOConfig(
        output_dir=str(tmp_path),
        beta=beta,
        loss_type=["sigmoid", "sft"],
        loss_weights=[1.0, nll_coef],
        per_device_train_batch_size=2,
        use_cpu=True,
        report_to="none",
        max_length=None,
        save_strategy="no",
    )
    trainer = DPOTrainer(policy, ref_model=ref, args=args, train_dataset=data, processing_class=tokenizer)
    batch = trainer.data_collator([trainer.train_dataset[i] for i in range(2)])  # rows: chosen ×2, rejected ×2
    trl_loss = trainer.compute_loss(trainer.model, batch).item()

    ours = {**batch, "segment_ids": torch.where(batch["completion_mask"].bool(), 0, NOT_SCORED)}
    sums, counts = segment_logps(policy, ours, 1)
    with torch.no_grad():
        ref_sums, _ = segment_logps(ref, ours, 1)
    out = PreferenceLoss(beta, length_normalize=False, nll_coef=nll_coef)(sums, ref_sums, counts)
    assert out.loss.item() == pytest.approx(trl_loss, rel=1e-5)
    assert out.preference_loss.item() != pytest.approx(math.log(2))  # a non-trivial comparison


def test_preference_training_on_shared_prefixes_is_reproducible_on_two_threads(tmp_path):
    """Two runs of the same training give the same weights, bit for bit, with two threads and batches
    whose rows share a prefix: the backward of reading one prefix's cache from several rows adds into
    the same entries, in a thread-dependent order unless `fit` asks torch for deterministic kernels
    (measured without them: the SWEET-RL critic differed from run to run)."""
    AcceleratorState._reset_state(True)  # as a stage's new process: TRL's trainer above set another precision

    gen = torch.Generator().manual_seed(5)

    def tokens(n: int) -> list[int]:
        return torch.randint(6, 64, (n,), generator=gen).tolist()

    sequences, keys = [], []
    for state in range(4):  # 4 states of 120 tokens, 8 candidate turns after each
        prefix = [BOS] + tokens(120)
        for _ in range(8):
            turn = tokens(12) + [END]
            sequences.append(SegmentedSequence(prefix + turn, [X] * len(prefix) + [0] * len(turn)))
            keys.append(f"state{state}")
    pairs = [(i, i + 1) for i in range(0, len(sequences), 2)]
    data = PairData(sequences, pairs, group_pairs([keys[c] for c, _ in pairs]))
    config = tiny_config(
        64, max_length=256, tie_word_embeddings=False, pad_token_id=PAD, bos_token_id=BOS, eos_token_id=END
    )
    torch.manual_seed(0)
    reference = LlamaForCausalLM(config)
    ref = reference_segment_logps(reference, sequences, batch_size=8, pad_id=PAD)
    p = TrainerParams(seed=0, epochs=2, learning_rate=1e-2, batch_size=8)
    torch.set_num_threads(2)  # the module's fixture restores one thread
    weights = []
    for run in range(2):
        loss = PreferenceLoss(beta=0.1, length_normalize=True)
        engine = training_params(threads=2)
        settings = TrainRun(trainer=p, engine=engine, log_dir=tmp_path / str(run), name="critic")
        model = train_preference(copy.deepcopy(reference), ScoredPairs(data, ref), loss, run=settings, pad_id=PAD).model
        weights.append(torch.cat([q.detach().flatten() for q in model.parameters()]))
    assert not torch.equal(weights[0], torch.cat([q.detach().flatten() for q in reference.parameters()]))
    assert torch.equal(weights[0], weights[1])
