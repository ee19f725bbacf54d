"""The offline renderer, on real headless Chromium: placeholders, blocking, faults. Real ColBench pages and
pages that attack the pages after them: tests/integration/test_rendering.py."""

from __future__ import annotations

import io
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.request import urlopen

import pytest
from PIL import Image

from sweetflow.frontend.render import RenderPool, is_tailwind_2_2_19, picsum_size, placeholder_png
from tests.support.params import render_params

TIMEOUT_S = 6.0  # each page starts a renderer of its own: room for a loaded machine
PARAMS = render_params(pages=2, timeout_s=TIMEOUT_S)
GRADIENT_START, GRADIENT_END = (112, 128, 150), (214, 196, 160)
HANG = "<html><body><script>while (true) {}</script></body></html>"
HANG_AFTER_LOAD = "<html><body onload='setTimeout(() => { while (true) {} }, 0)'>late</body></html>"
# Allocates without bound: the renderer dies at its V8 heap limit (RenderParams.js_heap_mb).
CRASH = "<html><body><script>const a = []; while (true) a.push(new Array(1e6).fill(1.5));</script></body></html>"


@pytest.fixture(scope="module")
def pool():
    with RenderPool(PARAMS) as p:
        yield p


def image(png: bytes) -> Image.Image:
    return Image.open(io.BytesIO(png)).convert("RGB")


def near(pixel, colour, tolerance=2) -> bool:
    return all(abs(a - b) <= tolerance for a, b in zip(pixel, colour))


def test_picsum_images_arrive_at_the_requested_size(pool):
    images = [
        ("/id/48/300/200", 300, 200),
        ("/200/100", 200, 100),
        ("/150", 150, 150),
        ("/id/48/120/60-learning", 120, 60),
    ]
    tags = "".join(f'<img style="display:block" src="https://picsum.photos{path}">' for path, _, _ in images)
    shot = image(pool.render(f'<html><body style="margin:0; background:#fff">{tags}</body></html>'))
    top = 0
    for _, width, height in images:
        assert near(shot.getpixel((0, top)), GRADIENT_START)
        assert near(shot.getpixel((width - 1, top + height - 1)), GRADIENT_END, tolerance=3)
        assert shot.getpixel((width, top)) == (255, 255, 255)  # just right of the image: the page
        top += height
    assert shot.getpixel((0, top)) == (255, 255, 255)


@pytest.mark.parametrize(
    "url, size",
    [
        ("https://picsum.photos/id/48/1600/900", (1600, 900)),
        ("https://picsum.photos/id/48/300/200-learning", (300, 200)),
        ("https://picsum.photos/seed/abc/640/480?grayscale", (640, 480)),
        ("https://picsum.photos/200", (200, 200)),
        ("https://fastly.picsum.photos/id/48/10/20.jpg", (10, 20)),
        ("https://picsum.photos/id/48/6000/100", None),  # larger than picsum serves
        ("https://picsum.photos/", None),
        ("https://notpicsum.photos/200/100", None),
        ("https://example.com/200/100", None),
    ],
)
def test_picsum_urls(url, size):
    assert picsum_size(url) == size


def test_placeholder_is_a_png_of_the_size():
    assert Image.open(io.BytesIO(placeholder_png(37, 11))).size == (37, 11)


@pytest.mark.parametrize(
    "url, served",
    [
        ("https://cdn.jsdelivr.net/npm/tailwindcss@2.2.19/dist/tailwind.min.css", True),
        ("https://unpkg.com/tailwindcss@2.2.19/dist/tailwind.css?v=1", True),
        ("https://cdnjs.cloudflare.com/ajax/libs/tailwindcss/2.2.19/tailwind.min.css", True),
        ("https://cdn.jsdelivr.net/npm/tailwindcss@2.2.18/dist/tailwind.min.css", False),
        ("https://cdn.jsdelivr.net/npm/tailwindcss@2.2.19/dist/base.min.css", False),
        ("https://cdn.tailwindcss.com", False),
    ],
)
def test_tailwind_urls(url, served):
    assert is_tailwind_2_2_19(url) == served


class _Recorder(BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self):
        self.hits.append(self.path)
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def local_server():
    """A real HTTP server the pages must never reach; yields its base URL and the paths it was asked for."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    urlopen(f"{base}/reachable").read()  # it does answer whoever asks
    assert _Recorder.hits == ["/reachable"]
    _Recorder.hits.clear()
    yield base, _Recorder.hits
    server.shutdown()
    _Recorder.hits.clear()


def test_requests_to_other_hosts_are_blocked(pool, local_server):
    base, hits = local_server
    red = "width:100px; height:100px; background:rgb(255,0,0)"
    page = f"""<html><head>
<link rel="stylesheet" href="{base}/style.css">
<link rel="stylesheet" href="https://cdn.jsdelivr.net/npm/tailwindcss@2.2.18/dist/tailwind.min.css">
<script src="{base}/script.js"></script>
</head><body style="margin:0; background:#fff">
<div id="local" style="{red}"></div><div id="remote" style="{red}"></div><div id="xhr" style="{red}"></div>
<div class="bg-green-500" style="width:100px; height:100px"></div>
<img src="{base}/pixel.png" onerror="document.getElementById('local').style.background = 'rgb(0,0,255)'">
<img src="https://example.com/pixel.png" onerror="document.getElementById('remote').style.background = 'rgb(0,0,255)'">
<iframe src="{base}/frame.html"></iframe>
<script>
  try {{ const x = new XMLHttpRequest(); x.open('GET', '{base}/xhr', false); x.send(); }}
  catch (e) {{ document.getElementById('xhr').style.background = 'rgb(0,0,255)'; }}
  fetch('{base}/fetch').catch(() => {{}});
  fetch('https://example.com/api').catch(() => {{}});
  new WebSocket('ws://127.0.0.1:{base.rsplit(":", 1)[1]}/socket');
  navigator.sendBeacon('{base}/beacon', 'x');
</script></body></html>"""
    shot = image(pool.render(page))
    assert shot.getpixel((50, 50)) == (0, 0, 255)  # the local image failed
    assert shot.getpixel((50, 150)) == (0, 0, 255)  # so did example.com's
    assert shot.getpixel((50, 250)) == (0, 0, 255)  # the synchronous XHR threw
    assert shot.getpixel((50, 350)) == (255, 255, 255)  # Tailwind 2.2.18 was not served
    time.sleep(0.5)  # room for the asynchronous fetch, WebSocket and beacon to go out, if they could
    assert hits == []


def test_pages_that_navigate_away_or_open_dialogs_stay_as_they_are(pool):
    green = "<body style='background:rgb(0,128,0)'>"
    pages = [
        f"<html>{green}<script>location.href = 'https://example.com/';</script></body></html>",
        f"<html><head><meta http-equiv='refresh' content='0; url=https://example.com/'></head>{green}</body></html>",
        f"<html>{green}<script>alert('hello'); confirm('sure?'); window.open('https://example.com/');</script></body></html>",
    ]
    for shot in pool.render_many(pages, desc=None):
        assert image(shot).getpixel((5, 5)) == (0, 128, 0)


def test_a_page_stops_running_once_its_batch_is_done(pool):
    ticking = "<html><body><script>setInterval(() => fetch('https://example.com/tick').catch(() => {}), 20);</script></body></html>"  # noqa: E501
    assert pool.render(ticking) is not None
    blocked = pool.stats["blocked"]
    time.sleep(0.5)  # 25 ticks, were the page still open
    assert pool.stats["blocked"] == blocked


def test_hanging_and_crashing_pages_give_none_and_the_pool_recovers(pool):
    normal = "<html><body style='background:rgb(0,128,0)'>ok</body></html>"
    before = pool.stats.copy()
    start = time.perf_counter()
    shots = pool.render_many([HANG, HANG_AFTER_LOAD, CRASH, normal], desc=None)
    elapsed = time.perf_counter() - start
    assert shots[:3] == [None, None, None]
    assert image(shots[3]).getpixel((5, 5)) == (0, 128, 0)
    assert elapsed < 2 * TIMEOUT_S + 5  # two pages at a time: the two hangs run side by side
    assert pool.stats["timeouts"] - before["timeouts"] == 2
    assert pool.stats["crashes"] - before["crashes"] == 1
    # The broken pages were replaced: both pages of the pool serve again.
    assert all(shot is not None for shot in pool.render_many([normal, normal], desc=None))


def test_a_dead_browser_is_relaunched(pool):
    launches = pool.stats["browser_launches"]
    pool._call(pool._browser.browser.close())  # the browser dies under the pool
    assert pool.render("<html><body>again</body></html>") is not None
    assert pool.stats["browser_launches"] == launches + 1


def test_rendering_is_deterministic(pool):
    page = """<html><body><p id="p"></p><img src="https://picsum.photos/id/48/300/200">
<script>document.getElementById('p').textContent = Math.random() + ' ' + new Date().toISOString();</script>
</body></html>"""
    first, second = pool.render_many([page, page], desc=None)  # on the two pages of the pool
    assert first == second == pool.render(page)


def test_screenshots_span_viewport_to_cap(pool):
    tall = "<html><body style='margin:0'><div style='height:20000px; background:#10B981'></div></body></html>"
    short = "<html><body>one line</body></html>"
    tall_shot, short_shot = pool.render_many([tall, short], desc=None)
    assert image(tall_shot).size == (PARAMS.viewport_width, PARAMS.max_height)
    assert image(short_shot).size == (PARAMS.viewport_width, PARAMS.viewport_height)


def test_render_pool_needs_its_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="Tailwind CSS 2.2.19 not found.*setup.sh"):
        RenderPool(render_params(tailwind_css=tmp_path / "missing.css")).start()
    with pytest.raises(FileNotFoundError, match="Chromium not found"):
        RenderPool(render_params(chromium=tmp_path / "chromium")).start()


def test_no_packet_leaves_the_browser_by_webrtc_or_http():
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    udp.settimeout(0.1)
    tcp = socket.create_server(("127.0.0.1", 0))
    tcp.settimeout(0.1)
    udp_port, tcp_port = udp.getsockname()[1], tcp.getsockname()[1]
    page = f"""<html><body><script>
    for (const url of ['stun:127.0.0.1:{udp_port}', 'turn:127.0.0.1:{udp_port}']) {{
      const pc = new RTCPeerConnection({{iceServers: [{{urls: url, username: 'u', credential: 'c'}}]}});
      pc.createDataChannel('x');
      pc.createOffer().then((offer) => pc.setLocalDescription(offer));
    }}
    fetch('http://127.0.0.1:{tcp_port}/leak').catch(() => {{}});
    new Image().src = 'http://127.0.0.1:{tcp_port}/leak.png';
    </script><p>probe</p></body></html>"""
    try:
        with RenderPool(render_params(pages=1, timeout_s=TIMEOUT_S)) as pool:
            assert "network-namespace" in pool.isolation
            assert pool.render(page) is not None
            deadline = time.monotonic() + 2.0  # ICE gathering runs on after the screenshot
            received = []
            while time.monotonic() < deadline:
                try:
                    received.append(udp.recvfrom(2048))
                except TimeoutError:
                    pass
                try:
                    received.append(tcp.accept())
                except TimeoutError:
                    pass
    finally:
        udp.close()
        tcp.close()
    assert received == []


def test_a_dvc_experiments_copy_finds_the_projects_tailwind(tmp_path, monkeypatch):
    """`dvc exp run --queue/--temp` runs in <project>/.dvc/tmp/exps/<dir>: a copy of what git tracks,
    without the Tailwind file scripts/setup.sh fetched into the project's vendor/."""
    from sweetflow.frontend.render import project_file

    relative = Path("vendor/tailwindcss-2.2.19/tailwind.min.css")
    (tmp_path / relative).parent.mkdir(parents=True)
    (tmp_path / relative).write_text("/* tailwind */")
    copy = tmp_path / ".dvc" / "tmp" / "exps" / "tmpabc123"
    copy.mkdir(parents=True)
    monkeypatch.chdir(copy)
    assert project_file(relative) == tmp_path / relative
    (copy / relative).parent.mkdir(parents=True)
    (copy / relative).write_text("/* the copy's own */")
    assert project_file(relative) == relative  # a file in the working directory wins
    monkeypatch.chdir(tmp_path / "vendor")  # not a DVC experiment's copy: the path stays as given
    assert project_file(Path("missing.css")) == Path("missing.css")
