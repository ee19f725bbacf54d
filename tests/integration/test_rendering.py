"""The offline renderer on real ColBench pages (the same pixels with Tailwind's whole stylesheet or only
the rules each page uses) and against pages that attack the pages rendered after them: real headless
Chromium, a minute or more of rendering, so outside the quick unit loop."""

from __future__ import annotations

import io
import time

import pytest
from PIL import Image

from sweetflow.frontend.render import RenderPool
from tests.support.browser import frontend_rows
from tests.support.params import render_params

TIMEOUT_S = 6.0  # each page starts a renderer of its own: room for a loaded machine
PARAMS = render_params(pages=2, timeout_s=TIMEOUT_S)
GREEN_500 = (16, 185, 129)  # Tailwind 2's #10B981
GRAY_100 = (243, 244, 246)  # #F3F4F6


def image(png: bytes) -> Image.Image:
    return Image.open(io.BytesIO(png)).convert("RGB")


def test_real_rows_render_offline_with_tailwind():
    rows = frontend_rows()
    # The stage's own time limit: on a loaded machine a long real page can take more than TIMEOUT_S.
    with RenderPool(render_params(pages=2)) as pool:
        shots = pool.render_many([row["ground_truth"] for row in rows], desc=None)
        stats = pool.stats.copy()
    assert all(shot is not None for shot in shots)
    sizes = [image(shot).size for shot in shots]
    assert all(w == PARAMS.viewport_width and PARAMS.viewport_height <= h <= PARAMS.max_height for w, h in sizes)
    # Each page's stylesheet came from the local copy, and its picsum images from the placeholder.
    assert stats["tailwind_served"] == len(rows)
    picsum_pages = sum("picsum.photos" in row["ground_truth"] for row in rows)
    assert stats["picsum_served"] >= picsum_pages
    # Row 0: <header class="bg-green-500 p-4"> on <body class="bg-gray-100">. The header is 68 px
    # tall (2 x 16 px padding + a 36 px text-3xl line), its title on the left.
    assert 'class="bg-green-500 text-white p-4"' in rows[0]["ground_truth"]
    first = image(shots[0])
    assert first.getpixel((1200, 10)) == GREEN_500
    assert first.getpixel((640, 700)) == GRAY_100
    # Row 16 stacks five h-screen blocks: full-page shots measure the page, not the viewport.
    assert sizes[16] == (1280, 5 * PARAMS.viewport_height)
    # Each page got only the Tailwind rules it can use: the same pixels as with the whole stylesheet.
    with RenderPool(render_params(pages=2, tailwind_subset=False)) as pool:
        assert pool.render_many([row["ground_truth"] for row in rows], desc=None) == shots


# A page that opens a popup whose timer keeps rewriting whatever document its opener shows next; and
# one that keeps opening such popups, so that one may be born after the pool has closed the others.
REWRITER = """w.eval(`setInterval(() => { try {
  opener.document.body.innerHTML = '<h1 style="font-size:200px">OWNED</h1>';
  opener.document.body.style.background = 'red'; } catch (e) {} }, 2)`);"""
POPUP = f"""<html><body><script>
const w = window.open('about:blank');
if (w) {{ {REWRITER} }}
setInterval(() => {{ document.body.style.background = 'red'; }}, 5);
</script><p>attacker</p></body></html>"""
POPUP_FLOOD = f"""<html><body><script>
function spawn() {{ const w = window.open('about:blank'); if (w) {{ {REWRITER} }} }}
spawn();
setInterval(spawn, 3);
</script><p>attacker</p></body></html>"""


@pytest.mark.parametrize("attack", [POPUP, POPUP_FLOOD], ids=["popup", "popup flood"])
def test_a_page_cannot_reach_the_pages_rendered_after_it(attack):
    honest = [
        f"<html><body class='p-8'><h1 class='text-4xl text-green-500'>page {i}</h1>"
        f"<div class='h-64 bg-gray-100'></div></body></html>"
        for i in range(5)
    ]
    with RenderPool(render_params(pages=1, timeout_s=TIMEOUT_S)) as alone:
        expected = [alone.render(page) for page in honest]
    with RenderPool(render_params(pages=1, timeout_s=TIMEOUT_S)) as shared:
        in_one_batch = shared.render_many([attack, *honest], desc=None)[1:]
        shared.render(attack)  # a flood of popups may well time out: what counts is what follows
        time.sleep(0.2)  # the attacker's timers would run now, between renders
        one_by_one = [shared.render(page) for page in honest]
    assert in_one_batch == expected and one_by_one == expected
