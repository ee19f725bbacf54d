"""A loopback HTTP reverse proxy that injects faults, for testing clients of OpenAI-compatible servers.

    with FaultProxy(server_base_url, drop=0.1, error=0.2) as proxy:
        client = OpenAI(base_url=proxy.base_url, api_key="unused", max_retries=5)
        ...
        assert proxy.counts["errors"] > 0

For a seeded random share of requests the proxy, instead of passing the request through:
- drops the connection without answering (the client sees "server disconnected"),
- delays it by `delay_s` seconds before forwarding it (long enough to trip a client timeout),
- answers with an error status (429 / 500 / 503 by default) and an OpenAI-shaped JSON error body,
  without forwarding it (with `retry_after`, also the `retry-after-ms` / `Retry-After` headers
  that OpenAI sends and its client obeys).
Every other request is forwarded to the upstream unchanged and the answer streamed back, so
streaming (SSE) responses keep working.

Besides, with `reply_fault`, every `fault_every`-th POST gets, instead of the upstream's answer, a 200 that no
real server here sends (`transformers serve` cannot be made to): "html" (a gateway's HTML page), "not_json"
(a body that is not JSON), "no_message" (a chat completion whose choice has no message), "trickle" (a valid
completion sent a byte every 0.05 s) or "huge" (a valid completion of 10 MB); or "answer", a well-formed final
answer at once (the tiny served model seldom answers in the protocol, and a test may need episodes that end).
`bodies` keeps every POST's body (what the client asked, counted at the server's door).

The sequence of decisions is fixed by `seed`; under concurrent requests, which request gets which
decision depends on arrival order. The proxy only listens on 127.0.0.1, only forwards to a loopback
upstream (fault tests send traffic to this machine only) and stops with its `with` block.
Standard library only: one thread per connection.
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import math
import random
import socket
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

# Headers that describe one hop's connection, not the message: never copied across the proxy.
HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "content-length",
    "host",
}
REPLY_FAULTS = {"html", "not_json", "no_message", "trickle", "huge", "answer"}
REASONS = {429: "rate_limit_exceeded", 500: "server_error", 502: "bad_gateway", 503: "service_unavailable"}


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class FaultProxy:
    """A context manager running the proxy in a background thread; see the module docstring."""

    def __init__(
        self,
        upstream_base_url: str,
        drop: float = 0.1,
        delay: float = 0.1,
        delay_s: float = 2.0,
        error: float = 0.1,
        error_status: tuple[int, ...] = (429, 500, 503),
        seed: int = 0,
        retry_after: float | None = None,
        upstream_timeout: float = 300.0,
        reply_fault: str | None = None,
        fault_every: int = 1,
    ):
        if reply_fault is not None and reply_fault not in REPLY_FAULTS:
            raise ValueError(f"reply_fault {reply_fault!r}: expected one of {sorted(REPLY_FAULTS)}")
        for name, p in (("drop", drop), ("delay", delay), ("error", error)):
            if not 0.0 <= p <= 1.0:
                raise ValueError(f"{name}={p} is not a probability")
        if drop + delay + error > 1.0:
            raise ValueError(f"drop + delay + error = {drop + delay + error} exceeds 1")
        if error > 0 and not error_status:
            raise ValueError("error > 0 needs at least one error_status")
        url = urlsplit(upstream_base_url)
        if url.scheme != "http" or not url.hostname or not _is_loopback(url.hostname):
            raise ValueError(f"upstream must be an http:// loopback address, not {upstream_base_url!r}")
        self.upstream_host = url.hostname
        self.upstream_port = url.port or 80
        self._base_path = url.path.rstrip("/")
        self.drop, self.delay, self.delay_s, self.error = drop, delay, delay_s, error
        self.error_status = tuple(error_status)
        self.retry_after = retry_after
        self.upstream_timeout = upstream_timeout
        self.reply_fault, self.fault_every = reply_fault, fault_every
        self.bodies: list[bytes] = []
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._counts: Counter = Counter()
        self._status_counts: Counter = Counter()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ----- what the tests read -----

    @property
    def base_url(self) -> str:
        """The upstream's base URL with the proxy's address in place of the upstream's."""
        if self._server is None:
            raise RuntimeError("FaultProxy is not running")
        return f"http://127.0.0.1:{self._server.server_address[1]}{self._base_path}"

    @property
    def counts(self) -> dict[str, int]:
        """How many requests arrived and what was done to them: requests = passed + dropped +
        delayed + errors; forwarded counts the passed and delayed ones that reached the upstream;
        upstream_failures those for which forwarding itself failed (answered 502)."""
        keys = ("requests", "passed", "dropped", "delayed", "errors", "forwarded", "upstream_failures", "reply_faults")
        with self._lock:
            return {k: self._counts[k] for k in keys}

    @property
    def status_counts(self) -> dict[int, int]:
        """Injected error answers by status code."""
        with self._lock:
            return dict(self._status_counts)

    # ----- life cycle -----

    def __enter__(self) -> FaultProxy:
        proxy = self

        class Handler(_ProxyHandler):
            owner = proxy

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fault-proxy", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stopping.set()  # wakes delayed requests so that they finish now
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    # ----- decisions -----

    def _decide(self) -> tuple[str, int | None]:
        """Draw this request's fate: ("pass" | "drop" | "delay" | "error", status)."""
        with self._lock:
            self._counts["requests"] += 1
            r = self._rng.random()
            if r < self.drop:
                action, status = "drop", None
            elif r < self.drop + self.error:
                action, status = "error", self._rng.choice(self.error_status)
            elif r < self.drop + self.error + self.delay:
                action, status = "delay", None
            else:
                action, status = "pass", None
            self._counts[{"drop": "dropped", "error": "errors", "delay": "delayed", "pass": "passed"}[action]] += 1
            if status is not None:
                self._status_counts[status] += 1
            return action, status

    def _count(self, key: str) -> None:
        with self._lock:
            self._counts[key] += 1


class _ProxyHandler(BaseHTTPRequestHandler):
    owner: FaultProxy
    # HTTP/1.0: one request per connection, the end of a body is the end of the connection. That
    # makes a dropped connection unambiguous and lets streamed answers pass without re-chunking.
    protocol_version = "HTTP/1.0"

    def log_message(self, format, *args):  # noqa: A002 - the base class's signature
        pass  # quiet: the counters say what happened

    def do_GET(self):
        self._handle()

    def do_POST(self):
        self._handle()

    def do_PUT(self):
        self._handle()

    def do_DELETE(self):
        self._handle()

    def do_OPTIONS(self):
        self._handle()

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        owner = self.owner
        if self.command == "POST":
            with owner._lock:
                owner.bodies.append(body or b"")
                due = owner.reply_fault is not None and len(owner.bodies) % owner.fault_every == 0
                owner._counts["reply_faults"] += due
            if due:
                self._send_reply_fault(owner.reply_fault)
                return
        action, status = owner._decide()
        if action == "drop":
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        if action == "error":
            self._send_error_json(status)
            return
        if action == "delay" and owner._stopping.wait(owner.delay_s):
            return  # the proxy is stopping: give up on this request
        self._forward(body)

    def _send_error_json(self, status: int) -> None:
        code = REASONS.get(status, "error")
        payload = json.dumps(
            {"error": {"message": f"injected fault: HTTP {status}", "type": code, "param": None, "code": code}}
        ).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        if self.owner.retry_after is not None:
            # What OpenAI's own API sends; its client waits this long instead of backing off.
            self.send_header("retry-after-ms", str(int(self.owner.retry_after * 1000)))
            self.send_header("Retry-After", str(math.ceil(self.owner.retry_after)))
        self.end_headers()
        self.wfile.write(payload)

    def _send_reply_fault(self, fault: str) -> None:
        content = "x" * 10_000_000 if fault == "huge" else "I WANT TO ANSWER: def f(): return 1"
        completion = {
            "id": "chatcmpl-fault",
            "object": "chat.completion",
            "created": 0,
            "model": "fault",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
        }
        if fault == "no_message":
            del completion["choices"][0]["message"]
        body, kind = json.dumps(completion).encode(), "application/json"
        if fault == "html":
            body, kind = b"<html><body><h1>502 Bad Gateway</h1></body></html>", "text/html"
        elif fault == "not_json":
            body = b'{"id": "chatcmpl-fault", "choices": [{"message": '
        try:
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if fault != "trickle":
                self.wfile.write(body)
                return
            for byte in body:  # until the client gives up, or the proxy stops
                if self.owner._stopping.wait(0.05):
                    return
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
        except OSError:
            pass  # the client cut it off: what the test wants

    def _forward(self, body: bytes | None) -> None:
        owner = self.owner
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        conn = http.client.HTTPConnection(owner.upstream_host, owner.upstream_port, timeout=owner.upstream_timeout)
        try:
            conn.request(self.command, self.path, body=body, headers=headers)
            resp = conn.getresponse()
        except OSError as exc:
            conn.close()
            owner._count("upstream_failures")
            try:
                self.send_error(502, f"upstream unreachable: {exc}")
            except OSError:
                pass
            return
        owner._count("forwarded")
        try:
            self.send_response(resp.status, resp.reason)
            for key, value in resp.getheaders():
                if key.lower() not in HOP_BY_HOP and key.lower() not in ("server", "date"):
                    self.send_header(key, value)
            length = resp.getheader("Content-Length")
            if length is not None:
                self.send_header("Content-Length", length)
            self.end_headers()
            while chunk := resp.read1(65536):
                self.wfile.write(chunk)
                self.wfile.flush()
        except OSError:
            pass  # the client went away; nothing to tell it
        finally:
            conn.close()
