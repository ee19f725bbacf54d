"""scripts/frontend_pictures.py: which test dialogue a picture shows, and how the picture is laid out."""

from __future__ import annotations

import importlib.util
import io
from pathlib import Path

import polars as pl
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image

SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "frontend_pictures.py"
spec = importlib.util.spec_from_file_location("frontend_pictures", SCRIPT)
pictures = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pictures)


@given(
    rewards=st.lists(st.one_of(st.none(), st.floats(0, 1)), min_size=1, max_size=30),
    quantile=st.floats(0, 1),
)
def test_the_picked_episode_is_at_the_quantile_of_the_first_seed(rewards, quantile):
    n = len(rewards)
    first = pl.DataFrame({"task_id": [f"t{i:02d}" for i in range(n)], "reward": rewards, "seed_index": [1] * n})
    other = first.with_columns(seed_index=pl.lit(2, pl.Int64), reward=pl.lit(1.0))  # never picked: a later seed
    row = pictures.pick(pl.concat([other, first.with_columns(pl.col("seed_index").cast(pl.Int64))]), quantile)
    assert row["seed_index"] == 1
    ordered = sorted((0.0 if r is None else r, f"t{i:02d}") for i, r in enumerate(rewards))
    assert (row["reward"], row["task_id"]) == ordered[min(int(quantile * n), n - 1)]


def test_a_picture_puts_the_target_left_and_the_page_right_and_grey_for_no_page():
    red = io.BytesIO()
    Image.new("RGB", (1280, 2000), (255, 0, 0)).save(red, "PNG")
    target = pictures.panel(red.getvalue(), (1280, 800))
    missing = pictures.panel(None, (1280, 800))
    assert target.size == missing.size == (pictures.PANEL_WIDTH, 400)  # the first viewport only
    out = pictures.side_by_side(target, missing, ("target", "page"))
    assert out.getpixel((10, pictures.CAPTION_HEIGHT + 10)) == (255, 0, 0)
    assert out.getpixel((pictures.PANEL_WIDTH + 20, pictures.CAPTION_HEIGHT + 10)) == (200, 200, 200)
