"""Each page its own site, on real headless Chromium: nothing a page leaves behind (a cookie,
`window.name`, local, session or IndexedDB storage, its history) reaches a page
rendered after it in the same pool, within one batch or in a later one; and a page that keeps its
renderer busy after its screenshot cannot delay or fail the next page.

Each probe paints what it sees into its own screenshot: green when it finds nothing."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from sweetflow.frontend.render import RenderPool
from tests.support.params import render_params

# Long enough for a loaded machine: a probe that times out shows no colour at all.
TIMEOUT_S = 15.0
# Delays the load event (each image is fetched through the pool), so that an asynchronous read
# (IndexedDB) has painted its answer before the page is shot.
GREEN, GRAY, RED = (0, 128, 0), (128, 128, 128), (255, 0, 0)
SLOW_LOAD = "".join(f'<img src="https://picsum.photos/id/{n}/40/40">' for n in range(4))


def probe(script: str) -> str:
    """A page whose background is what `script` assigns to `seen` (a CSS colour), gray until then."""
    return (
        f"<html><body style='margin:0; background:gray'><div style='height:600px'></div>{SLOW_LOAD}<script>"
        "const paint = (seen) => { document.body.style.background = seen; };\n"
        f"{script}</script></body></html>"
    )


# Each channel: a page that reports what an earlier page left in it (green: nothing) and then leaves
# something itself. Channels held per origin are probed by the same page twice (the same HTML is
# served from the same origin); the others by a second, different page.
CHANNELS = {
    "cookie": (
        "paint(document.cookie.includes('leak') ? 'red' : 'green');"
        "document.cookie = 'leak=1; domain=sweetflow.invalid; path=/; max-age=3600';"
        "document.cookie = 'leak2=1; path=/; max-age=3600';",
        False,
    ),
    "window.name": ("paint(window.name ? 'red' : 'green'); window.name = 'leak';", False),
    "localStorage": (
        "paint(localStorage.getItem('leak') ? 'red' : 'green'); localStorage.setItem('leak', '1');",
        True,
    ),
    "sessionStorage": (
        "paint(sessionStorage.getItem('leak') ? 'red' : 'green'); sessionStorage.setItem('leak', '1');",
        True,
    ),
    "IndexedDB": (
        """const open = indexedDB.open('leak', 1);
open.onupgradeneeded = () => open.result.createObjectStore('s');
open.onsuccess = () => {
  const store = open.result.transaction('s', 'readwrite').objectStore('s');
  const got = store.get('k');
  got.onsuccess = () => { paint(got.result ? 'red' : 'green'); store.put(1, 'k'); };
};""",
        True,
    ),
    # How many pages the tab showed: a fresh tab's blank first page and this one, no earlier page.
    "history": ("paint(history.length <= 2 ? 'green' : 'red');", False),
}


def reader_of(channel: str) -> tuple[str, str]:
    script, same_origin = CHANNELS[channel]
    writer = probe(script)
    return writer, writer if same_origin else writer.replace("<html>", "<html><!-- another page -->")


@pytest.mark.parametrize("channel", list(CHANNELS))
def test_nothing_a_page_leaves_reaches_a_later_page(channel):
    writer, reader = reader_of(channel)
    with RenderPool(render_params(pages=1, timeout_s=TIMEOUT_S)) as pool:
        in_one_batch = painted(pool, [writer, reader])
        in_a_later_batch = painted(pool, [reader])
    assert in_one_batch + in_a_later_batch == [GREEN] * 3


def painted(pool: RenderPool, pages: list[str], tries: int = 3) -> list[tuple[int, int, int] | None]:
    """The colours of `pages` rendered in `pool`, rendered again while a probe shows gray: it had not
    painted when shot (an asynchronous read, IndexedDB, on a loaded machine). Each try is itself a
    later batch of the same pool, so a trace left by any earlier try shows red, which ends it."""
    for _ in range(tries):
        seen = [colour(shot) for shot in pool.render_many(pages, desc=None)]
        assert RED not in seen, seen  # a probe found a trace
        if GRAY not in seen:
            break
    return seen


def colour(png: bytes | None) -> tuple[int, int, int] | None:
    return None if png is None else Image.open(io.BytesIO(png)).convert("RGB").getpixel((5, 5))


HONEST = [f"<html><body style='background:rgb(0,{100 + 20 * i},0)'><h1>page {i}</h1></body></html>" for i in range(5)]
# Pages that keep their renderer busy for good once they are shot and the tab moves on: through the
# events of leaving a page, which run after the screenshot, when the next page is loaded.
BUSY = "while (true) {}"
SABOTEURS = {
    event: f"<html><body><script>addEventListener('{event}', () => {{ {BUSY} }});</script>{event}</body></html>"
    for event in ("pagehide", "beforeunload", "visibilitychange")
}


@pytest.fixture(scope="module")
def honest_alone() -> list[bytes]:
    with RenderPool(render_params(pages=1, timeout_s=TIMEOUT_S)) as pool:
        return pool.render_many(HONEST, desc=None)


@pytest.mark.parametrize("saboteur", list(SABOTEURS))
def test_a_page_busy_after_its_screenshot_cannot_delay_or_fail_the_next(saboteur, honest_alone):
    page = SABOTEURS[saboteur]
    with RenderPool(render_params(pages=1, timeout_s=TIMEOUT_S)) as pool:
        in_one_batch = pool.render_many([page, *HONEST], desc=None)
        assert pool.render_many([page], desc=None)[0] is not None
        in_a_later_batch = pool.render_many(HONEST, desc=None)
    assert in_one_batch[0] is not None
    assert in_one_batch[1:] == honest_alone and in_a_later_batch == honest_alone
    assert pool.stats["timeouts"] == pool.stats["errors"] == pool.stats["crashes"] == 0
