"""HTML pages to PNG screenshots on headless Chromium, fully offline and deterministic.

`RenderPool` keeps one browser and renders many HTML strings concurrently, up to `pages` at a
time. Each page is its own site: it is rendered in a browser context of its own (an empty in-memory
profile: no cookie, `window.name`, local, session or IndexedDB storage, cache or history of any other
page), and the context is closed as soon as its screenshot is taken; the next page's context is made
while the current one renders. Closing it ends the page's
renderer process with everything that runs in it (timers, a busy loop, popups), so nothing a page
leaves running can delay, fail or touch the next one. (Reusing a tab and its context saved a
renderer launch per page, but carried cookies and `window.name` to later pages, and a page busy
after its screenshot stalled the next page of its tab.) The browser runs in an empty
network namespace where the system allows one (root, or unprivileged user namespaces): no packet
leaves it by any channel, WebRTC included. Every request a page makes is also intercepted:

- the page itself is served from a made-up origin named after its content (`page_url`), so
  relative URLs stay inside it and are blocked like everything else, and the same HTML always sees
  the same URL;
- Tailwind CSS 2.2.19 from any CDN (any `tailwind*.css` under a `tailwindcss@2.2.19/` or
  `tailwindcss/2.2.19/` path) is answered from the local copy of the npm package's
  `dist/tailwind.min.css`, by default only the rules the page can use (`sweetflow.frontend.tailwind`);
  other versions are blocked, as any other request;
- `picsum.photos` images (`/id/<id>/<w>/<h>`, `/seed/<s>/<w>/<h>`, `/<w>/<h>`, `/<w>`; trailing junk
  after a number, as in `/200-learning`, is ignored) are answered with a generated placeholder PNG of
  the requested size (a fixed grey-blue to sand gradient; sides above 5000 px are refused);
- everything else is blocked: navigations away (links followed by script, meta refresh, iframes)
  get "204 No Content", so the page stays as it was; other requests are aborted; WebSockets are
  closed; and host names do not resolve at all.

Screenshots are `viewport_width` wide and as tall as the page, at least `viewport_height` and at most
`max_height` (defaults 1280 x 800 .. 4096): the viewport of a common laptop, and a cap that keeps a
runaway page to about 20 MB of pixels. Animations are stopped, the clock is fixed at
`FIXED_TIME` and `Math.random` is seeded, so the same HTML gives the same PNG on the same machine.

A page that does not load and shoot within `timeout_s`, or whose renderer crashes, yields None (the
whole browser is relaunched if it died), and the pool keeps serving.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import logging
import re
import shutil
import subprocess
import tempfile
import threading
from collections import Counter, deque
from collections.abc import Sequence
from concurrent.futures import as_completed
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
from PIL import Image
from playwright.async_api import Browser, BrowserContext, Page, Playwright, Route, async_playwright
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeout
from tqdm import tqdm

from sweetflow.frontend.params import RenderParams
from sweetflow.frontend.tailwind import TailwindSubset

log = logging.getLogger(__name__)


def page_url(html: str) -> str:
    """Where a page is served from: an origin of its own, the same for the same HTML (so the same
    page renders the same), unguessable from any other page."""
    return f"http://page-{hashlib.sha256(html.encode()).hexdigest()[:32]}.sweetflow.invalid/"


FIXED_TIME = "2024-01-01T12:00:00Z"
# mulberry32 with a fixed seed, installed before any script of the page runs.
SEEDED_RANDOM_JS = """(() => {
  let a = 0x2545F491;
  Math.random = function () {
    a = (a + 0x6D2B79F5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
})();"""
# Run once the page is committed: wait for the window's load event (the document's own word:
# Playwright's load tracking loses it when the page starts a navigation that is then cancelled),
# then until every image, CSS background image and font is loaded and decoded (lazy images are
# made eager: a full-page shot never scrolls to them), then for two frames, so that the screenshot
# never catches a page half painted.
SETTLE_JS = r"""async () => {
  if (document.readyState !== 'complete') await new Promise((done) => addEventListener('load', done, { once: true }));
  const waits = [];
  for (const img of document.images) {
    if (img.loading === 'lazy') img.loading = 'eager';
    waits.push(img.decode().catch(() => {}));
  }
  const backgrounds = new Set();
  for (const el of document.querySelectorAll('*')) {
    for (const m of getComputedStyle(el).backgroundImage.matchAll(/url\("?(.*?)"?\)/g)) backgrounds.add(m[1]);
  }
  for (const url of backgrounds) {
    const img = new Image();
    img.src = url;
    waits.push(img.decode().catch(() => {}));
  }
  waits.push(document.fonts.ready);
  await Promise.all(waits);
  await new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
}"""
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    # Exact sRGB colours in screenshots, whatever the machine's display profile.
    "--force-color-profile=srgb",
    # Walls besides the network namespace and request interception: no host name resolves, and
    # WebRTC sends no UDP of its own (it bypasses both interception and the resolver).
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
]
# `unshare` variants that put the browser in a new, empty network namespace: as root, or as a user
# where unprivileged user namespaces are allowed.
UNSHARE_COMMANDS = (["unshare", "--net", "--"], ["unshare", "--net", "--map-root-user", "--"])
TAILWIND_RE = re.compile(r"tailwindcss(?:@|/)v?2\.2\.19/(?:.*/)?tailwind[^/]*\.css$")
PICSUM_RE = re.compile(r"^/(?:(?:id|seed)/[^/]+/)?(\d+)(?:/(\d+))?")
PICSUM_MAX_SIDE = 5000
CLOSE_TIMEOUT_S = 5.0


def picsum_size(url: str) -> tuple[int, int] | None:
    """(width, height) a picsum.photos image URL asks for; None for other URLs or absurd sizes."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if host != "picsum.photos" and not host.endswith(".picsum.photos"):
        return None
    match = PICSUM_RE.match(parts.path)
    if not match:
        return None
    width = int(match.group(1))
    height = int(match.group(2)) if match.group(2) else width
    if not (1 <= width <= PICSUM_MAX_SIDE and 1 <= height <= PICSUM_MAX_SIDE):
        return None
    return width, height


@lru_cache(maxsize=16)
def placeholder_png(width: int, height: int) -> bytes:
    """A fixed diagonal gradient (grey-blue top left to sand bottom right) of the given size."""
    # Drawn small and stretched: memory stays at the output's own pixels even at 5000 x 5000.
    t = (np.linspace(0, 1, 256)[None, :] + np.linspace(0, 1, 256)[:, None]) / 2
    start, end = np.array([112, 128, 150]), np.array([214, 196, 160])
    base = Image.fromarray((start + t[..., None] * (end - start)).round().astype(np.uint8), "RGB")
    out = io.BytesIO()
    base.resize((width, height), Image.Resampling.BILINEAR).save(out, format="PNG", compress_level=1)
    return out.getvalue()


def is_tailwind_2_2_19(url: str) -> bool:
    return bool(TAILWIND_RE.search(urlsplit(url).path))


def project_file(path: Path) -> Path:
    """`path`, or for a relative path missing from the working directory, the same path in the project
    a DVC experiment runs a copy of: `dvc exp run --queue` and `--temp` work in
    `<project>/.dvc/tmp/exps/<dir>`, which holds what git tracks, not what scripts/setup.sh fetched."""
    if path.is_absolute() or path.exists():
        return path
    for parent in Path.cwd().resolve().parents:
        if parent.name == "exps" and parent.parent.name == "tmp" and parent.parent.parent.name == ".dvc":
            candidate = parent.parent.parent.parent / path
            return candidate if candidate.exists() else path
    return path


def offline_launcher(chromium: Path, directory: Path) -> Path | None:
    """A script that starts `chromium` in a new, empty network namespace, written into `directory`;
    None where no `unshare` variant may create one here."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return None
    for command in UNSHARE_COMMANDS:
        try:
            works = subprocess.run([*command, "true"], capture_output=True, timeout=10).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            works = False
        if works:
            script = directory / "chromium-offline"
            script.write_text(f'#!/bin/sh\nexec {" ".join([unshare, *command[1:]])} "{chromium}" "$@"\n')
            script.chmod(0o755)
            return script
    return None


@dataclass
class _Tab:
    """One page in a browser context of its own."""

    context: BrowserContext
    generation: int  # the browser launch it belongs to
    page: Page | None = None
    html: str = ""  # the page it serves
    crashed: bool = False


@dataclass
class _Browser:
    playwright: Playwright | None = None
    browser: Browser | None = None
    generation: int = 0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class RenderPool:
    """One headless Chromium rendering up to `params.pages` pages at once; use as a context manager.

    Playwright's sync API is bound to the thread that started it and serves one call at a time.
    The pool runs the async API on an event loop in its own thread instead: pages render
    concurrently, and `render_many` can be called from any thread (e.g. simulator workers).
    """

    def __init__(self, params: RenderParams):
        self.params = params
        # Pages: rendered, timeouts, crashes, errors; requests: tailwind_served, picsum_served, blocked;
        # browser_launches. Written by the pool's thread only.
        self.stats: Counter[str] = Counter()
        self.isolation: list[str] = []  # "network-namespace" when the browser has no network at all
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle (caller's thread) ------------------------------------------------------------

    def __enter__(self) -> RenderPool:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> None:
        if self._loop is not None:
            return
        if not self.params.chromium.exists():
            raise FileNotFoundError(
                f"Chromium not found at {self.params.chromium} (render.chromium); run scripts/setup.sh "
                "(it installs Debian's `chromium` package)"
            )
        tailwind = project_file(self.params.tailwind_css)
        if not tailwind.is_file():
            raise FileNotFoundError(
                f"Tailwind CSS 2.2.19 not found at {self.params.tailwind_css} (render.tailwind_css, relative to "
                f"{Path.cwd()}); run scripts/setup.sh"
            )
        self._tailwind = tailwind.read_text()
        self._subset = TailwindSubset(self._tailwind) if self.params.tailwind_subset else None
        self._scratch = tempfile.TemporaryDirectory(prefix="sweetflow-render-")
        launcher = offline_launcher(self.params.chromium, Path(self._scratch.name))
        self._executable = launcher or self.params.chromium
        self.isolation = ["network-namespace"] if launcher else []
        if launcher is None:
            log.warning(
                "Chromium runs without a network namespace (needs root or user namespaces): "
                "request interception and resolver rules are its only walls"
            )
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="render-pool", daemon=True)
        self._thread.start()
        try:
            self._call(self._open())
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if self._loop is None:
            return
        try:
            self._call(self._shutdown())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
            self._loop.close()
            self._loop = self._thread = None
            self._scratch.cleanup()

    def _call(self, coro):
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    # -- rendering (caller's thread) ------------------------------------------------------------

    def render(self, html: str) -> bytes | None:
        return self.render_many([html], desc=None)[0]

    def render_many(self, htmls: Sequence[str], desc: str | None = "rendering") -> list[bytes | None]:
        """PNG screenshots of the pages, in order; None where a page timed out or crashed.
        `desc` labels a progress bar (None: no bar)."""
        if self._loop is None:
            raise RuntimeError("RenderPool is not started; use it as a context manager")
        futures = [asyncio.run_coroutine_threadsafe(self._render(html), self._loop) for html in htmls]
        with tqdm(total=len(futures), desc=desc, unit="page", disable=desc is None) as bar:
            for _ in as_completed(futures):
                bar.update()
        return [f.result() for f in futures]

    # -- the event loop's side ------------------------------------------------------------------

    async def _open(self) -> None:
        self._browser = _Browser(playwright=await async_playwright().start())
        await self._live_browser()
        self._slots = asyncio.Semaphore(self.params.pages)
        # Tabs made ahead, one per slot: the next page's context and renderer start up while the
        # current page renders.
        self._spares = deque(asyncio.ensure_future(self._new_tab()) for _ in range(self.params.pages))

    async def _shutdown(self) -> None:
        for spare in self._spares:
            spare.cancel()
        await asyncio.gather(*self._spares, return_exceptions=True)
        await self._drop_browser()
        if self._browser.playwright is not None:
            await self._browser.playwright.stop()

    async def _live_browser(self) -> tuple[Browser, int]:
        """The browser, relaunched if it has died; and the number of its launch."""
        state = self._browser
        async with state.lock:
            if state.browser is None or not state.browser.is_connected():
                # launch() gives the browser a fresh, empty profile directory and deletes it on close.
                state.browser = await state.playwright.chromium.launch(
                    executable_path=str(self._executable),
                    args=CHROMIUM_ARGS + [f"--js-flags=--max-old-space-size={self.params.js_heap_mb}"],
                )
                state.generation += 1
                self.stats["browser_launches"] += 1
            return state.browser, state.generation

    async def _render(self, html: str) -> bytes | None:
        async with self._slots:
            tab = await self._take_tab()
            tab.html = html
            try:
                png = await asyncio.wait_for(self._shoot(tab.page, html), self.params.timeout_s)
            except (TimeoutError, PlaywrightError) as e:
                timeout = isinstance(e, (TimeoutError, PlaywrightTimeout))
                self.stats["crashes" if tab.crashed else "timeouts" if timeout else "errors"] += 1
                return None
            finally:
                await self._close(tab)
            self.stats["rendered"] += 1
            return png

    async def _take_tab(self) -> _Tab:
        """The oldest spare tab if it is whole and of the live browser, else a new tab; a new spare
        starts in its place."""
        spare = self._spares.popleft()
        self._spares.append(asyncio.ensure_future(self._new_tab()))
        try:
            tab = await spare
        except PlaywrightError:
            tab = None
        browser = self._browser.browser
        if tab is not None:
            if tab.generation == self._browser.generation and browser is not None and browser.is_connected():
                if not tab.page.is_closed():
                    return tab
            await self._close(tab)
        try:
            return await self._new_tab()
        except PlaywrightError:
            # The browser died between the check and its use: relaunch it once; a second failure is real.
            await self._drop_browser()
            return await self._new_tab()

    async def _new_tab(self) -> _Tab:
        """A page in a new, empty browser context, serving whatever its `html` is set to at its `page_url`."""
        browser, generation = await self._live_browser()
        context = await browser.new_context(
            viewport={"width": self.params.viewport_width, "height": self.params.viewport_height},
            device_scale_factor=1,
            reduced_motion="reduce",
            service_workers="block",
        )
        tab = _Tab(context, generation)
        try:
            context.set_default_timeout(self.params.timeout_s * 1000)
            await context.add_init_script(SEEDED_RANDOM_JS)
            await context.clock.set_fixed_time(FIXED_TIME)
            await context.route("**/*", lambda route: self._answer(route, tab.html))
            await context.route_web_socket("**/*", lambda ws: ws.close())
            tab.page = await context.new_page()
        except BaseException:
            await self._close(tab)
            raise
        tab.page.on("crash", lambda _: setattr(tab, "crashed", True))
        return tab

    async def _close(self, tab: _Tab) -> None:
        """Close the tab's context: its pages and popups, and their renderer processes, end with it."""
        try:
            await asyncio.wait_for(tab.context.close(), CLOSE_TIMEOUT_S)
        except (TimeoutError, PlaywrightError):
            # A browser that cannot close a context is not trusted with the next page (unless it
            # has been replaced already).
            if tab.generation == self._browser.generation:
                await self._drop_browser()

    async def _shoot(self, page: Page, html: str) -> bytes:
        await page.goto(page_url(html), wait_until="commit")
        await page.evaluate(SETTLE_JS)
        clip = {"x": 0, "y": 0, "width": self.params.viewport_width, "height": self.params.max_height}
        # With full_page, the clip is cut to the document: viewport width, page height up to the cap.
        return await page.screenshot(type="png", full_page=True, clip=clip, animations="disabled")

    async def _drop_browser(self) -> None:
        """Close the browser (if it still answers); the next page launches a new one."""
        async with self._browser.lock:
            stale, self._browser.browser = self._browser.browser, None
        if stale is not None:
            try:
                await asyncio.wait_for(stale.close(), CLOSE_TIMEOUT_S)
            except (TimeoutError, PlaywrightError):
                pass

    async def _answer(self, route: Route, html: str) -> None:
        url = route.request.url
        try:
            if url == page_url(html):
                await route.fulfill(status=200, content_type="text/html; charset=utf-8", body=html)
            elif is_tailwind_2_2_19(url):
                self.stats["tailwind_served"] += 1
                css = self._subset.for_page(html) if self._subset else self._tailwind
                await route.fulfill(status=200, content_type="text/css; charset=utf-8", body=css)
            elif (size := picsum_size(url)) is not None:
                self.stats["picsum_served"] += 1
                await route.fulfill(status=200, content_type="image/png", body=placeholder_png(*size))
            elif route.request.is_navigation_request():
                # "No content" cancels a navigation and leaves the page as it was (an abort would show an error page).
                self.stats["blocked"] += 1
                await route.fulfill(status=204)
            else:
                self.stats["blocked"] += 1
                await route.abort("blockedbyclient")
        except PlaywrightError:
            pass  # the page was closed (timed out, crashed) while this request was pending
