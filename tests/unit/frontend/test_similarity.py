"""Frontend rewards: the offline `pixels` metric on real screenshots, CLIP from a local tiny checkpoint,
win rate and the parameters."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from PIL import Image
from pydantic import ValidationError

from sweetflow.core.errors import InputError
from sweetflow.frontend.params import RenderParams, SimilarityParams
from sweetflow.frontend.render import RenderPool
from sweetflow.frontend.similarity import ClipEmbedder, Similarity, pixel_similarity, win_rate
from tests.support.browser import frontend_rows
from tests.support.params import render_params, similarity_params

BLANK = "<html><body></body></html>"
ROWS = [0, 5, 13, 24]  # header/footer bands, a pink navigation bar, a full green page, a two-tone layout


@pytest.fixture(scope="module")
def shots() -> dict[str, list[bytes]]:
    """Real screenshots: a few ColBench targets and a blank page."""
    rows = frontend_rows()
    with RenderPool(render_params(pages=2)) as pool:
        pngs = pool.render_many([rows[i]["ground_truth"] for i in ROWS] + [BLANK], desc=None)
    return {"targets": pngs[:-1], "blank": pngs[-1]}


def png(array: np.ndarray) -> bytes:
    out = io.BytesIO()
    Image.fromarray(array, "RGB").save(out, format="PNG")
    return out.getvalue()


def test_identical_answer_scores_one_and_a_blank_page_clearly_less(shots):
    targets, blank = shots["targets"], shots["blank"]
    similarity = Similarity(similarity_params(metric="pixels"))
    assert similarity(targets, targets) == pytest.approx([1.0] * len(targets), abs=1e-9)
    against_blank = similarity([blank] * len(targets), targets)
    assert max(against_blank) < 0.7 and np.mean(against_blank) < 0.5
    # Another real page is no closer than the target itself.
    assert max(similarity(targets[1:], targets[:-1])) < 0.7


def test_no_page_scores_zero(shots):
    target = shots["targets"][0]
    assert Similarity(similarity_params())([None, target], [target, target]) == [0.0, pytest.approx(1.0)]


def test_a_target_without_screenshot_is_an_error(shots):
    with pytest.raises(ValueError, match="no screenshot"):
        Similarity(similarity_params())([shots["blank"]], [None])


def test_small_changes_score_between_blank_and_identical(shots):
    target = Image.open(io.BytesIO(shots["targets"][0])).convert("RGB")
    recoloured = np.asarray(target).copy()
    recoloured[:68] = (59, 130, 246)  # the green header turned blue-500
    score = pixel_similarity(target, Image.fromarray(recoloured))
    blank = pixel_similarity(target, Image.open(io.BytesIO(shots["blank"])).convert("RGB"))
    assert blank < score < 1.0


images = st.tuples(st.integers(1, 24), st.integers(1, 24)).flatmap(lambda size: arrays(np.uint8, (size[1], size[0], 3)))


@settings(max_examples=60, deadline=None)
@given(images, images)
def test_pixels_is_symmetric_and_bounded(a, b):
    first, second = Image.fromarray(a, "RGB"), Image.fromarray(b, "RGB")
    forward, backward = pixel_similarity(first, second), pixel_similarity(second, first)
    assert forward == pytest.approx(backward, abs=1e-12)
    assert 0.0 <= forward <= 1.0
    assert pixel_similarity(first, first) == pytest.approx(1.0, abs=1e-9)


@pytest.fixture(scope="module")
def tiny_clip(tmp_path_factory):
    """A randomly initialised CLIP with tiny towers and its image processor, saved like a real checkpoint."""
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel

    torch.manual_seed(0)
    text = dict(
        vocab_size=64,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        max_position_embeddings=16,
        bos_token_id=0,
        eos_token_id=1,
        pad_token_id=1,
    )
    vision = dict(
        image_size=32, patch_size=8, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2
    )
    path = tmp_path_factory.mktemp("tiny-clip")
    CLIPModel(CLIPConfig(text_config=text, vision_config=vision, projection_dim=8)).save_pretrained(path)
    CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}).save_pretrained(path)
    return path


def test_clip_from_a_local_checkpoint_batched(tiny_clip, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.chdir(tmp_path)  # params allow a CLIP checkpoint under models/clip/ only: a declared dependency
    (tmp_path / "models/clip").mkdir(parents=True)
    (tmp_path / "models/clip/tiny").symlink_to(tiny_clip)
    rng = np.random.default_rng(0)
    pngs = [png(rng.integers(0, 256, (40 + 7 * i, 64, 3), dtype=np.uint8)) for i in range(5)]
    similarity = Similarity(similarity_params(metric="clip", clip_checkpoint="models/clip/tiny", batch_size=2))
    assert similarity(pngs, pngs) == pytest.approx([1.0] * 5, abs=1e-5)
    shifted = similarity(pngs[1:] + [None], pngs)
    assert all(-1.0 <= s <= 1.0 for s in shifted) and shifted[-1] == 0.0
    # Batches of 2 (3 forward passes) embed exactly as one batch of 5.
    images = [Image.open(io.BytesIO(p)).convert("RGB") for p in pngs]
    batched = ClipEmbedder(tiny_clip, batch_size=2).embed(images)
    whole = ClipEmbedder(tiny_clip, batch_size=16).embed(images)
    assert batched.shape == (5, 8)
    torch.testing.assert_close(batched, whole, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(batched.norm(dim=-1), torch.ones(5))


def test_clip_never_downloads(tmp_path):
    with pytest.raises(InputError, match="not a local directory; nothing is downloaded"):
        ClipEmbedder("openai/clip-vit-base-patch32")
    with pytest.raises(InputError, match="cannot load a CLIP model"):
        ClipEmbedder(tmp_path)


def test_win_rate_counts_ties_as_half():
    assert win_rate([0.9, 0.5, 0.7, 0.1], [0.8, 0.5, 0.9, 0.0]) == pytest.approx((1 + 0.5 + 0 + 1) / 4)
    scores = [0.3, 0.6, 0.9]
    assert win_rate(scores, scores) == 0.5  # a method against itself
    with pytest.raises(ValueError, match="one score per task"):
        win_rate([0.1], [0.1, 0.2])
    with pytest.raises(ValueError, match="no tasks"):
        win_rate([], [])


def test_params_sections():
    with pytest.raises(ValidationError, match="clip_checkpoint"):
        SimilarityParams(metric="clip", clip_checkpoint=None, batch_size=16, win_metric="design")
    with pytest.raises(ValidationError, match="Extra inputs"):
        SimilarityParams(metrics="pixels", metric="pixels", clip_checkpoint=None, batch_size=16, win_metric="design")
    with pytest.raises(ValidationError, match="win_metric"):
        SimilarityParams(metric="pixels", clip_checkpoint=None, batch_size=16, win_metric="pixels")
    with pytest.raises(ValidationError, match="Extra inputs"):
        RenderParams(page=3, **render_params().model_dump())
    described = [*RenderParams.model_fields.values(), *SimilarityParams.model_fields.values()]
    assert all(field.description for field in described)
